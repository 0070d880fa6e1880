-- Agents whose endpoint cannot be reached (issue 28): after a number of
-- dispatches in a row that could not be delivered (connection refused, no
-- answer in time) an agent becomes `unreachable`, and the scorer skips it
-- until a heartbeat brings it back, instead of letting it keep winning
-- and failing its missions' tasks.

ALTER TABLE agents DROP CONSTRAINT agents_status_check;
ALTER TABLE agents ADD CONSTRAINT agents_status_check
    CHECK (status IN ('idle', 'working', 'blocked', 'done', 'offline', 'unreachable', 'retired'));

ALTER TABLE agents
    -- Dispatches in a row that never reached the worker; any answer resets it.
    ADD COLUMN dispatch_failures integer NOT NULL DEFAULT 0 CHECK (dispatch_failures >= 0);

-- The partial indexes count only agents that can work.
DROP INDEX agents_role;
CREATE INDEX agents_role ON agents (workspace_id, role)
    WHERE status NOT IN ('offline', 'unreachable', 'retired');
DROP INDEX agents_monitored;
CREATE INDEX agents_monitored ON agents (last_seen_at)
    WHERE heartbeat_timeout_secs IS NOT NULL AND status NOT IN ('offline', 'unreachable', 'retired');
