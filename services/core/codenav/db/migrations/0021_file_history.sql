-- 0021: what a checkout's recent git history says about its files (codenav.index.history):
-- in how many of the last commits each file changed, and how many commits ago it last did.
-- find_files' ranker reads them (churn, recent): over the commit-history suite, left out
-- repository by repository, they moved hit@5 by about three points. One row per file of
-- the working tree that changed in those commits; history_heads records the commit they
-- were read at, so a run reads them again only when HEAD moved. Derived from git, not
-- exported in snapshots: the next index of the checkout reads them again.
CREATE TABLE file_history (
    repo_id integer NOT NULL REFERENCES repos (id) ON DELETE CASCADE,
    path text NOT NULL,
    commits integer NOT NULL,
    age integer NOT NULL,
    PRIMARY KEY (repo_id, path)
);
CREATE TABLE history_heads (
    repo_id integer PRIMARY KEY REFERENCES repos (id) ON DELETE CASCADE,
    commit text NOT NULL,
    files integer NOT NULL,
    read_at timestamptz NOT NULL DEFAULT now()
);
