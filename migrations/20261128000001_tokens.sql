-- Tokens that can be named, listed, expired and revoked (issue 27).
--
-- `name`, `last_used_at` and `revoked_at` exist since the core migration;
-- the IF NOT EXISTS forms keep this one correct on any database that has
-- them. Old rows stay valid: no expiry, never marked used, not revoked.

ALTER TABLE api_tokens ADD COLUMN IF NOT EXISTS expires_at timestamptz;
ALTER TABLE api_tokens ADD COLUMN IF NOT EXISTS last_used_at timestamptz;
ALTER TABLE api_tokens ADD COLUMN IF NOT EXISTS revoked_at timestamptz;

-- New names are 1 to 128 characters; NOT VALID leaves any older, longer
-- name readable instead of failing the migration.
ALTER TABLE api_tokens
    ADD CONSTRAINT api_tokens_name_length CHECK (length(name) BETWEEN 1 AND 128) NOT VALID;

-- The admin list pages through a workspace's tokens newest first.
CREATE INDEX IF NOT EXISTS api_tokens_workspace_id ON api_tokens (workspace_id, id);
-- ... which also serves every lookup the old single-column index did.
DROP INDEX IF EXISTS api_tokens_workspace;
