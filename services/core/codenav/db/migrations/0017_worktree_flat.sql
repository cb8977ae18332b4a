-- 0017: a working tree holds all of its rows itself: no base, no layer between (commit
-- trees of a branch and overlays are the layered ones). Statements for a working tree read
-- files, graph_files and graph_links by tree id instead of through tree_files(),
-- tree_ranks() and tree_links() (codenav.db.queries.flat_tree), and rely on this: every
-- statement through those functions plans and probes their two layers.
ALTER TABLE trees ADD CONSTRAINT trees_worktree_flat
    CHECK (kind <> 'worktree' OR (base_id IS NULL AND mid_id IS NULL));
