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
