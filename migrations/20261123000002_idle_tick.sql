-- The engine's tick must cost the same with 10 or 10,000 idle missions, and
-- must not slow down as finished missions pile up. The safety-net sweep
-- (engine::reconcile::sweep) asks two questions every few seconds:
--   - which executing missions have a pending task whose dependencies are
--     all done (promotions that slipped past), and
--   - which executing missions have no open task left (completions).
-- Without these indexes the first walked every executing mission's row to
-- reach its pending tasks, and the second hash-joined against a sequential
-- scan of every task ever stored (history included). With them both are
-- index-only walks over live work.

-- Executing missions only, with what the sweep returns (index-only scans).
CREATE INDEX orchestration_runs_executing ON orchestration_runs (id) INCLUDE (workspace_id)
    WHERE status = 'executing';

-- Open (non-terminal) tasks by mission: the completion check probes this
-- instead of the whole table. The predicate is the sweep's, word for word,
-- so the planner can match it.
CREATE INDEX orchestration_tasks_open ON orchestration_tasks (run_id)
    WHERE status NOT IN ('succeeded', 'failed', 'cancelled', 'skipped');

-- The pending-task index, now carrying the task id so the promotion check
-- reads it without visiting the table (replaces the one from the core
-- migration; same key and predicate).
DROP INDEX orchestration_tasks_pending;
CREATE INDEX orchestration_tasks_pending ON orchestration_tasks (run_id) INCLUDE (id)
    WHERE status = 'pending';
