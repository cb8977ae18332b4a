-- 0008: access control. Teams own repositories; a token has a role (read < write < admin),
-- a team, optionally explicit repository grants (then it sees only those), and an expiry.
-- Existing repositories and tokens go to the team `default`, existing tokens as its admins,
-- so current users keep working. Admin actions are recorded in audit_log. A repository can
-- be registered without indexing (index_enabled). Secrets redacted inside a file are
-- listed with its content (line and kind of each).
CREATE TABLE teams (
    id serial PRIMARY KEY,
    name text NOT NULL UNIQUE,
    created_at timestamptz NOT NULL DEFAULT now(),
    created_by text NOT NULL DEFAULT ''
);
INSERT INTO teams (name, created_by) VALUES ('default', 'migration 0008');

ALTER TABLE repos ADD COLUMN team_id integer REFERENCES teams (id);
UPDATE repos SET team_id = (SELECT id FROM teams WHERE name = 'default');
ALTER TABLE repos ALTER COLUMN team_id SET NOT NULL;
-- Names are unique per team: another team's repository of the same name is invisible.
ALTER TABLE repos DROP CONSTRAINT repos_name_key;
ALTER TABLE repos ADD CONSTRAINT repos_team_name_key UNIQUE (team_id, name);
ALTER TABLE repos ADD COLUMN index_enabled boolean NOT NULL DEFAULT true;

ALTER TABLE api_tokens ADD COLUMN role text NOT NULL DEFAULT 'admin'
    CHECK (role IN ('read', 'write', 'admin'));
ALTER TABLE api_tokens ALTER COLUMN role DROP DEFAULT;
ALTER TABLE api_tokens ADD COLUMN team_id integer REFERENCES teams (id);
UPDATE api_tokens SET team_id = (SELECT id FROM teams WHERE name = 'default');
ALTER TABLE api_tokens ALTER COLUMN team_id SET NOT NULL;
-- restricted: the token sees only the repositories in token_repos (none left: nothing).
ALTER TABLE api_tokens ADD COLUMN restricted boolean NOT NULL DEFAULT false;
ALTER TABLE api_tokens ADD COLUMN expires_at timestamptz;
ALTER TABLE api_tokens ADD COLUMN created_by text NOT NULL DEFAULT '';

CREATE TABLE token_repos (
    token_id integer NOT NULL REFERENCES api_tokens (id) ON DELETE CASCADE,
    repo_id integer NOT NULL REFERENCES repos (id) ON DELETE CASCADE,
    PRIMARY KEY (token_id, repo_id)
);
CREATE INDEX token_repos_repo_idx ON token_repos (repo_id);

CREATE TABLE audit_log (
    id bigserial PRIMARY KEY,
    at timestamptz NOT NULL DEFAULT now(),
    team_id integer REFERENCES teams (id),
    actor text NOT NULL,            -- the token's name and id, or the operator
    token_id integer,
    action text NOT NULL,           -- token.create, token.revoke, repo.register, repo.delete...
    target text NOT NULL,
    detail jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_log_team_idx ON audit_log (team_id, id DESC);

ALTER TABLE contents ADD COLUMN redactions jsonb NOT NULL DEFAULT '[]';
