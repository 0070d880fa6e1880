-- Timer start events (issue 20): one row per timer start event of a
-- workflow's latest version, due when the clock should next start an
-- instance of its process. Every replica's tick takes due rows with SKIP
-- LOCKED and, in one transaction, starts the instance and moves the row to
-- its next occurrence (or deletes it), so each occurrence starts one
-- instance however many replicas run. A new version replaces the rows; a
-- row whose definition text did not change keeps its due time and count.
CREATE TABLE IF NOT EXISTS workflow_timer_starts (
    workflow_id     uuid NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
    -- The workflow's workspace, copied so the tick needs no join.
    workspace_id    uuid NOT NULL,
    version         integer NOT NULL,
    process_id      text NOT NULL,
    start_event     text NOT NULL,
    kind            text NOT NULL CHECK (kind IN ('timeDate', 'timeDuration', 'timeCycle')),
    -- The timer definition as written (`R/PT1H`, `2030-01-01T09:00:00Z`).
    definition      text NOT NULL,
    due_at          timestamptz NOT NULL,
    -- Occurrences spent so far (missed ones included, see docs/workflows.md).
    fired           integer NOT NULL DEFAULT 0 CHECK (fired >= 0),
    PRIMARY KEY (workflow_id, process_id, start_event)
);
CREATE INDEX IF NOT EXISTS workflow_timer_starts_due ON workflow_timer_starts (due_at);
