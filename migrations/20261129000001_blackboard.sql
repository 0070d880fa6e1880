-- The mission blackboard (issue 18): a mission-scoped, versioned key/value
-- store of JSON values that the agents of one mission share (seed 003's
-- shared swarm state). Every write bumps the key's version; a writer may
-- make it a compare-and-set on the version it read. Deleting a key leaves a
-- tombstone (value NULL) whose version keeps counting, so a version read
-- before a delete can never match a key written again after it.

CREATE TABLE mission_blackboard (
    run_id       uuid NOT NULL REFERENCES orchestration_runs (id) ON DELETE CASCADE,
    key          text NOT NULL CHECK (length(key) BETWEEN 1 AND 200),
    workspace_id uuid NOT NULL,
    value        jsonb,
    version      bigint NOT NULL CHECK (version >= 1),
    updated_by   text NOT NULL,
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, key)
);
