-- 0017: a working tree holds all of its rows itself: no base, no layer between (commit
-- trees of a branch and overlays are the layered ones). Statements for a working tree read
-- files and the graph tables by tree id instead of through tree_files(), tree_ranks(),
-- tree_links(), tree_imports() and tree_edges() (codenav.db.queries.flat_tree), and rely on
-- this: every statement through those functions plans and probes their two layers.
ALTER TABLE trees ADD CONSTRAINT trees_worktree_flat
    CHECK (kind <> 'worktree' OR (base_id IS NULL AND mid_id IS NULL));
