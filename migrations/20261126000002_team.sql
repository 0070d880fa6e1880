-- Team collaboration, part 1: tool-use approvals.
--
-- A worker asks before a guarded tool call (`POST /v1/attempts/{id}/tool-approvals`).
-- The task's tool policy judges the request at once: auto-approved and
-- denied requests are stored already resolved (resolver `policy`), the rest
-- wait `pending` for a person until `expires_at`, when they become
-- `timed_out` with the configured default outcome. Every transition is
-- guarded by the status it leaves and writes its event in the same
-- transaction.
CREATE TABLE tool_approval_requests (
    id              uuid PRIMARY KEY,
    workspace_id    uuid NOT NULL REFERENCES workspaces (id),
    run_id          uuid NOT NULL REFERENCES orchestration_runs (id) ON DELETE CASCADE,
    task_id         uuid NOT NULL REFERENCES orchestration_tasks (id) ON DELETE CASCADE,
    attempt_id      uuid NOT NULL REFERENCES task_attempts (id) ON DELETE CASCADE,
    agent_id        text NOT NULL,
    tool            text NOT NULL CHECK (length(tool) BETWEEN 1 AND 128),
    arguments       jsonb NOT NULL DEFAULT '{}',
    -- What the call would touch and use; budgets add these up per attempt.
    paths           text[] NOT NULL DEFAULT '{}',
    diff_lines      bigint NOT NULL DEFAULT 0 CHECK (diff_lines >= 0),
    tokens          bigint NOT NULL DEFAULT 0 CHECK (tokens >= 0),
    files_changed   bigint NOT NULL DEFAULT 0 CHECK (files_changed >= 0),
    -- The policy's verdict: auto_approved, needs_approval or denied, and why.
    verdict         text NOT NULL CHECK (verdict IN ('auto_approved', 'needs_approval', 'denied')),
    reasons         text[] NOT NULL DEFAULT '{}',
    status          text NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'timed_out')),
    -- What a timed-out request means for the worker: approved or denied.
    timeout_outcome text NOT NULL CHECK (timeout_outcome IN ('approved', 'denied')),
    expires_at      timestamptz NOT NULL,
    resolver        text,
    rationale       text,
    resolved_at     timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX tool_approval_requests_queue ON tool_approval_requests (workspace_id, status, created_at);
CREATE INDEX tool_approval_requests_attempt ON tool_approval_requests (attempt_id);
CREATE INDEX tool_approval_requests_expiry ON tool_approval_requests (expires_at) WHERE status = 'pending';

-- Team decisions: a topic with options and evidence, put to the mission's
-- agents. open → committed (window closed or everyone voted; plurality,
-- ties broken by the orchestrator rule) | cancelled. The committed record
-- carries its ADR, rendered from the record.
CREATE TABLE team_decisions (
    id                 uuid PRIMARY KEY,
    workspace_id       uuid NOT NULL REFERENCES workspaces (id),
    mission_id         uuid NOT NULL REFERENCES orchestration_runs (id) ON DELETE CASCADE,
    -- A blocked task that raised it, if one did.
    task_id            uuid REFERENCES orchestration_tasks (id) ON DELETE CASCADE,
    proposer           text NOT NULL,
    topic              text NOT NULL CHECK (length(topic) BETWEEN 1 AND 500),
    -- [{label, description}], labels unique, 2–10 of them.
    options            jsonb NOT NULL,
    evidence           text[] NOT NULL DEFAULT '{}',
    recommended_option text,
    eligible           text[] NOT NULL CHECK (cardinality(eligible) >= 1),
    closes_at          timestamptz NOT NULL,
    status             text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'committed', 'cancelled')),
    committed_option   text,
    tie_broken         boolean NOT NULL DEFAULT false,
    tally              jsonb NOT NULL DEFAULT '{}',
    rationale          text,
    adr                text,
    closed_by          text,
    closed_at          timestamptz,
    version            bigint NOT NULL DEFAULT 1,
    created_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX team_decisions_mission ON team_decisions (workspace_id, mission_id, created_at);
CREATE INDEX team_decisions_open ON team_decisions (closes_at) WHERE status = 'open';

-- One vote per eligible agent; a vote may be changed while the decision is open.
CREATE TABLE team_decision_votes (
    decision_id uuid NOT NULL REFERENCES team_decisions (id) ON DELETE CASCADE,
    agent_id    text NOT NULL,
    option      text NOT NULL,
    rationale   text,
    cast_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (decision_id, agent_id)
);
