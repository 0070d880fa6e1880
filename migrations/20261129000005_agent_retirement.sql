-- Agents can be managed (issue 18): changed in place (PATCH) and retired
-- (DELETE). A retired agent keeps its row, so its history (attempts,
-- messages, events) still names it, but it takes no new work, counts in no
-- role's cardinality and cannot come back by heartbeat; only an operator's
-- PATCH of its status brings it back.

ALTER TABLE agents DROP CONSTRAINT agents_status_check;
ALTER TABLE agents ADD CONSTRAINT agents_status_check
    CHECK (status IN ('idle', 'working', 'blocked', 'done', 'offline', 'retired'));

ALTER TABLE agents
    -- A name for people; the id stays the key.
    ADD COLUMN display_name text CHECK (display_name IS NULL OR length(display_name) BETWEEN 1 AND 128),
    -- The version of the agent's description, which PATCH may guard on.
    -- `version` counts every change of the row, load and heartbeat status
    -- included, so guarding on it would refuse an operator's edit whenever
    -- the agent took or finished a task in between.
    ADD COLUMN profile_version bigint NOT NULL DEFAULT 1,
    -- When it was retired (NULL: it is not).
    ADD COLUMN retired_at timestamptz;

-- The partial indexes count only agents that can work; a retired agent is
-- as absent as an offline one.
DROP INDEX agents_role;
CREATE INDEX agents_role ON agents (workspace_id, role) WHERE status NOT IN ('offline', 'retired');
DROP INDEX agents_monitored;
CREATE INDEX agents_monitored ON agents (last_seen_at)
    WHERE heartbeat_timeout_secs IS NOT NULL AND status NOT IN ('offline', 'retired');
