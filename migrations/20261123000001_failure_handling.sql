-- Failure handling of the engine: the escalation ladder, verification of
-- must_pass criteria, progress checks on silent attempts, budget warnings,
-- agent liveness and past success per task type.

ALTER TABLE orchestration_tasks
    -- The last rung of the escalation ladder this task reached.
    ADD COLUMN escalation_step     text CHECK (escalation_step IN ('other_agent', 'higher_tier', 'replan', 'human')),
    -- Agents that already failed it for good: a different agent is the next rung.
    ADD COLUMN excluded_agents     text[] NOT NULL DEFAULT '{}',
    -- Only agents of at least this model tier may take it (the "higher tier" rung).
    ADD COLUMN min_model_tier      integer NOT NULL DEFAULT 0,
    -- Set when a silent attempt was asked for progress; a heartbeat clears it.
    ADD COLUMN progress_checked_at timestamptz,
    -- A result is waiting for a verifier agent's verdict before the task succeeds.
    ADD COLUMN verify_pending      boolean NOT NULL DEFAULT false,
    ADD COLUMN candidate_output    jsonb,
    -- A continuation goes back to the agent that asked for it.
    ADD COLUMN continue_agent_id   text;

ALTER TABLE orchestration_runs
    -- Replans triggered by the escalation ladder (bounded per mission).
    ADD COLUMN escalation_replans  integer NOT NULL DEFAULT 0,
    -- The 80 % budget warning fires once per mission.
    ADD COLUMN budget_warned       boolean NOT NULL DEFAULT false;

ALTER TABLE task_attempts
    -- 'verify' attempts ask a verifier agent to judge another attempt's result.
    ADD COLUMN purpose text NOT NULL DEFAULT 'work' CHECK (purpose IN ('work', 'verify'));

ALTER TABLE agents
    -- Agents that promise heartbeats go offline when silent this long; NULL = not monitored.
    ADD COLUMN heartbeat_timeout_secs integer CHECK (heartbeat_timeout_secs IS NULL OR heartbeat_timeout_secs BETWEEN 1 AND 86400);
CREATE INDEX agents_monitored ON agents (last_seen_at)
    WHERE heartbeat_timeout_secs IS NOT NULL AND status <> 'offline';

-- Past success of an agent on a task type: an input of the scorer. Updated in
-- the report's transaction, which already holds the agent's row lock.
CREATE TABLE agent_task_stats (
    workspace_id  uuid NOT NULL,
    agent_id      text NOT NULL,
    task_type     text NOT NULL,
    succeeded     bigint NOT NULL DEFAULT 0,
    failed        bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (workspace_id, agent_id, task_type),
    FOREIGN KEY (workspace_id, agent_id) REFERENCES agents (workspace_id, agent_id) ON DELETE CASCADE
);
