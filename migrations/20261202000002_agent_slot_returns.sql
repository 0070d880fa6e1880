-- Slots given back by reports, not yet folded into `agents.running_count`.
--
-- Every batch of reports used to update its agents' rows (running count,
-- last seen, status) and their success tallies, while holding its missions'
-- locks. Every claim updates the same agent rows when it takes slots, so
-- reports queued on claims and on each other, and missions queued on them.
-- A report whose worker answered now inserts rows here instead (no lock on
-- anything shared); whoever next locks the agent (a claim taking slots, or
-- the engine's periodic fold) deletes them and applies them to the agent.
-- Readers that need the free capacity subtract what is pending, so a
-- pending return is at worst not yet seen: a claim can under-admit for a
-- moment, never over-admit.
CREATE TABLE agent_slot_returns (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace_id uuid NOT NULL,
    agent_id     text NOT NULL,
    -- Slots given back (0 for a row that only carries a tally).
    slots        integer NOT NULL CHECK (slots >= 0),
    -- Past success to add for one task type (NULL: none).
    task_type    text,
    succeeded    integer NOT NULL DEFAULT 0,
    failed       integer NOT NULL DEFAULT 0,
    -- When the agent's worker answered (its LAST SEEN once folded).
    seen_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX agent_slot_returns_agent ON agent_slot_returns (workspace_id, agent_id);
-- Rows live for milliseconds: vacuum it as the ready queue is.
ALTER TABLE agent_slot_returns SET (autovacuum_vacuum_scale_factor = 0.0, autovacuum_vacuum_threshold = 500,
                                    autovacuum_analyze_scale_factor = 0.0, autovacuum_analyze_threshold = 500);

-- Slots of the agent still pending here: readers show
-- `running_count - agent_pending_slots(...)`.
CREATE FUNCTION agent_pending_slots(ws uuid, agent text) RETURNS integer
LANGUAGE sql STABLE AS $$
    SELECT coalesce(sum(slots), 0)::integer FROM agent_slot_returns
    WHERE workspace_id = ws AND agent_id = agent
$$;
