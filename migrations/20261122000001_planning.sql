-- Planning that takes time (an LLM call) happens outside any request: a
-- replica claims a mission in 'planning' with a lease, calls the model, and
-- stores the plan. The lease lets another replica take over if it dies.
ALTER TABLE orchestration_runs
    ADD COLUMN planning_lease_owner       text,
    ADD COLUMN planning_lease_expires_at  timestamptz,
    ADD COLUMN planning_attempts          integer NOT NULL DEFAULT 0,
    -- What the next (re)plan must take into account: rejected-plan feedback
    -- or new instructions.
    ADD COLUMN planning_feedback          text;
CREATE INDEX orchestration_runs_planning ON orchestration_runs (planning_lease_expires_at NULLS FIRST)
    WHERE status = 'planning';

-- Approval may pin a task to an agent; the dispatcher then uses only that agent.
ALTER TABLE orchestration_tasks ADD COLUMN pinned_agent_id text;
