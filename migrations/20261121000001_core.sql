-- Core model of the mission coordinator (DESIGN.md, "Core model").
-- Every row carries workspace_id (tenant isolation today, distribution key
-- tomorrow); every mutable aggregate carries a version for guarded writes.

CREATE TABLE workspaces (
    id          uuid PRIMARY KEY,
    name        text NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 200),
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_tokens (
    id            uuid PRIMARY KEY,
    workspace_id  uuid NOT NULL REFERENCES workspaces (id),
    name          text NOT NULL,
    role          text NOT NULL CHECK (role IN ('admin', 'operator', 'stakeholder', 'agent', 'worker')),
    -- For role 'agent': the only agent this token may act as.
    agent_id      text,
    -- sha256 of the secret; the secret itself is never stored.
    token_hash    bytea NOT NULL UNIQUE,
    created_at    timestamptz NOT NULL DEFAULT now(),
    last_used_at  timestamptz,
    revoked_at    timestamptz
);
CREATE INDEX api_tokens_workspace ON api_tokens (workspace_id);

CREATE TABLE agents (
    workspace_id     uuid NOT NULL REFERENCES workspaces (id),
    agent_id         text NOT NULL CHECK (agent_id ~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$'),
    role             text NOT NULL,
    kind             text NOT NULL DEFAULT 'roster' CHECK (kind IN ('roster', 'contractor')),
    -- Contractors are mission-scoped.
    mission_id       uuid,
    skills           text[] NOT NULL DEFAULT '{}',
    tools            text[] NOT NULL DEFAULT '{}',
    model            text,
    model_tier       integer NOT NULL DEFAULT 1 CHECK (model_tier BETWEEN 0 AND 10),
    endpoint_url     text NOT NULL,
    max_concurrency  integer NOT NULL CHECK (max_concurrency BETWEEN 1 AND 10000),
    -- Live attempts held by this agent; raised and lowered in the same
    -- transaction as the attempt, guarded by max_concurrency.
    running_count    integer NOT NULL DEFAULT 0 CHECK (running_count >= 0),
    trust            double precision NOT NULL DEFAULT 0.5 CHECK (trust BETWEEN 0 AND 1),
    cost_per_task    double precision NOT NULL DEFAULT 0 CHECK (cost_per_task >= 0),
    status           text NOT NULL DEFAULT 'idle' CHECK (status IN ('idle', 'working', 'blocked', 'done', 'offline')),
    last_seen_at     timestamptz,
    metadata         jsonb NOT NULL DEFAULT '{}',
    version          bigint NOT NULL DEFAULT 1,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workspace_id, agent_id)
);

CREATE TABLE orchestration_runs (
    id               uuid PRIMARY KEY,
    workspace_id     uuid NOT NULL REFERENCES workspaces (id),
    goal             text NOT NULL,
    autonomy         text NOT NULL CHECK (autonomy IN ('approve', 'autonomous')),
    status           text NOT NULL CHECK (status IN ('planning', 'awaiting_approval', 'executing', 'awaiting_review', 'paused', 'completed', 'failed', 'cancelled')),
    priority         integer NOT NULL DEFAULT 0,
    plan_version     integer NOT NULL DEFAULT 0,
    budget_limit     double precision CHECK (budget_limit IS NULL OR budget_limit >= 0),
    budget_spent     double precision NOT NULL DEFAULT 0,
    constraints      jsonb NOT NULL DEFAULT '{}',
    planner          text,
    failure_reason   text,
    -- Last per-mission event sequence number handed out; bumping it takes the
    -- run's row lock, which is what serializes a mission's transitions and
    -- keeps its event log gap-free.
    event_seq        bigint NOT NULL DEFAULT 0,
    created_by       uuid,
    version          bigint NOT NULL DEFAULT 1,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    started_at       timestamptz,
    finished_at      timestamptz
);
CREATE INDEX orchestration_runs_list ON orchestration_runs (workspace_id, id DESC);
CREATE INDEX orchestration_runs_list_status ON orchestration_runs (workspace_id, status, id DESC);
-- Reconcile looks only at live missions; finished ones must not cost anything.
CREATE INDEX orchestration_runs_live ON orchestration_runs (id)
    WHERE status IN ('planning', 'awaiting_approval', 'executing', 'awaiting_review', 'paused');

-- Every plan a mission has had, so earlier versions stay queryable.
CREATE TABLE orchestration_plans (
    workspace_id   uuid NOT NULL,
    run_id         uuid NOT NULL REFERENCES orchestration_runs (id) ON DELETE CASCADE,
    plan_version   integer NOT NULL,
    planner        text NOT NULL,
    provenance     jsonb NOT NULL DEFAULT '{}',
    spec           jsonb NOT NULL,
    critical_path  text[] NOT NULL DEFAULT '{}',
    estimated_cost double precision NOT NULL DEFAULT 0,
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, plan_version)
);

CREATE TABLE orchestration_tasks (
    id                  uuid PRIMARY KEY,
    workspace_id        uuid NOT NULL,
    run_id              uuid NOT NULL REFERENCES orchestration_runs (id) ON DELETE CASCADE,
    task_key            text NOT NULL,
    task_order          integer NOT NULL,
    title               text NOT NULL,
    task_type           text NOT NULL,
    description         text NOT NULL DEFAULT '',
    required_skills     text[] NOT NULL DEFAULT '{}',
    required_tools      text[] NOT NULL DEFAULT '{}',
    success_criteria    jsonb NOT NULL DEFAULT '[]',
    inputs              jsonb NOT NULL DEFAULT '{}',
    output              jsonb,
    status              text NOT NULL CHECK (status IN ('pending', 'queued', 'running', 'succeeded', 'retry_wait', 'awaiting_human', 'awaiting_approval', 'failed', 'cancelled', 'skipped')),
    assigned_agent_id   text,
    assignment_score    double precision,
    assignment_details  jsonb,
    attempt_count       integer NOT NULL DEFAULT 0,
    failure_count       integer NOT NULL DEFAULT 0,
    continuation_count  integer NOT NULL DEFAULT 0,
    max_attempts        integer NOT NULL DEFAULT 3 CHECK (max_attempts >= 1),
    next_attempt_at     timestamptz,
    current_attempt_id  uuid,
    lease_owner         text,
    lease_expires_at    timestamptz,
    last_error          text,
    feedback            text,
    estimated_cost      double precision NOT NULL DEFAULT 0,
    actual_cost         double precision NOT NULL DEFAULT 0,
    optional            boolean NOT NULL DEFAULT false,
    plan_version        integer NOT NULL,
    version             bigint NOT NULL DEFAULT 1,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    started_at          timestamptz,
    finished_at         timestamptz,
    UNIQUE (run_id, task_key),
    FOREIGN KEY (workspace_id, assigned_agent_id) REFERENCES agents (workspace_id, agent_id)
) WITH (fillfactor = 80);
CREATE INDEX orchestration_tasks_run ON orchestration_tasks (run_id, task_order);
-- Reconcile scans only leased work.
CREATE INDEX orchestration_tasks_leases ON orchestration_tasks (lease_expires_at) WHERE status = 'running';
-- The promotion sweep (safety net) looks only at waiting tasks.
CREATE INDEX orchestration_tasks_pending ON orchestration_tasks (run_id) WHERE status = 'pending';
ALTER TABLE orchestration_tasks SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02);

CREATE TABLE orchestration_task_dependencies (
    workspace_id        uuid NOT NULL,
    run_id              uuid NOT NULL REFERENCES orchestration_runs (id) ON DELETE CASCADE,
    task_id             uuid NOT NULL REFERENCES orchestration_tasks (id) ON DELETE CASCADE,
    depends_on_task_id  uuid NOT NULL REFERENCES orchestration_tasks (id) ON DELETE CASCADE,
    PRIMARY KEY (task_id, depends_on_task_id),
    CHECK (task_id <> depends_on_task_id)
);
CREATE INDEX orchestration_task_dependencies_reverse ON orchestration_task_dependencies (depends_on_task_id, task_id);

-- The ready queue: a row exists exactly while a task waits to be claimed.
-- Kept apart from orchestration_tasks so that claiming scans a small table
-- instead of a large, churning one (dead index entries there would make
-- claims slower over time).
CREATE TABLE task_queue (
    task_id       uuid PRIMARY KEY REFERENCES orchestration_tasks (id) ON DELETE CASCADE,
    workspace_id  uuid NOT NULL,
    run_id        uuid NOT NULL,
    priority      integer NOT NULL DEFAULT 0,
    ready_at      timestamptz NOT NULL DEFAULT now(),
    enqueued_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX task_queue_claim_order ON task_queue (priority DESC, ready_at, task_id);
ALTER TABLE task_queue SET (autovacuum_vacuum_scale_factor = 0.0, autovacuum_vacuum_threshold = 500,
                            autovacuum_analyze_scale_factor = 0.0, autovacuum_analyze_threshold = 500);

CREATE TABLE task_attempts (
    id                 uuid PRIMARY KEY,
    workspace_id       uuid NOT NULL,
    run_id             uuid NOT NULL REFERENCES orchestration_runs (id) ON DELETE CASCADE,
    task_id            uuid NOT NULL REFERENCES orchestration_tasks (id) ON DELETE CASCADE,
    attempt_number     integer NOT NULL,
    agent_id           text NOT NULL,
    worker_url         text NOT NULL,
    -- sha256 of the attempt's bearer token.
    token_hash         bytea NOT NULL,
    status             text NOT NULL CHECK (status IN ('dispatching', 'running', 'succeeded', 'failed', 'continued', 'cancelled', 'expired')),
    failure_kind       text CHECK (failure_kind IN ('infrastructure', 'quality')),
    report             jsonb,
    error              text,
    cost               double precision NOT NULL DEFAULT 0,
    tokens             bigint NOT NULL DEFAULT 0,
    dispatched_by      text NOT NULL,
    dispatched_at      timestamptz NOT NULL DEFAULT now(),
    accepted_at        timestamptz,
    last_heartbeat_at  timestamptz,
    finished_at        timestamptz,
    UNIQUE (task_id, attempt_number)
);
-- Invariant: at most one live attempt per task, enforced by the database too.
CREATE UNIQUE INDEX task_attempts_one_live ON task_attempts (task_id) WHERE status IN ('dispatching', 'running');

CREATE TABLE orchestration_events (
    id            bigserial PRIMARY KEY,
    workspace_id  uuid NOT NULL,
    run_id        uuid REFERENCES orchestration_runs (id) ON DELETE CASCADE,
    -- Gap-free sequence within the mission (ids are global and may have gaps).
    seq           bigint,
    task_id       uuid,
    attempt_id    uuid,
    kind          text NOT NULL,
    actor         text NOT NULL,
    payload       jsonb NOT NULL DEFAULT '{}',
    created_at    timestamptz NOT NULL DEFAULT now(),
    CHECK ((run_id IS NULL) = (seq IS NULL)),
    UNIQUE (run_id, seq)
);
CREATE INDEX orchestration_events_workspace ON orchestration_events (workspace_id, id);

CREATE TABLE board_tasks (
    id              uuid PRIMARY KEY,
    workspace_id    uuid NOT NULL,
    source_type     text NOT NULL CHECK (source_type IN ('orchestration', 'manual')),
    source_id       uuid,
    run_id          uuid REFERENCES orchestration_runs (id) ON DELETE CASCADE,
    title           text NOT NULL,
    column_name     text NOT NULL CHECK (column_name IN ('backlog', 'ready', 'in_progress', 'needs_human', 'review', 'done', 'failed')),
    assignee        text,
    attempt_number  integer NOT NULL DEFAULT 0,
    cost            double precision NOT NULL DEFAULT 0,
    version         bigint NOT NULL DEFAULT 1,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (source_type, source_id)
);
CREATE INDEX board_tasks_columns ON board_tasks (workspace_id, column_name);
CREATE INDEX board_tasks_run ON board_tasks (run_id);

-- Saved routines and custom HTN methods (built-in methods ship as data files).
CREATE TABLE plan_templates (
    id             uuid PRIMARY KEY,
    workspace_id   uuid NOT NULL REFERENCES workspaces (id),
    name           text NOT NULL,
    description    text NOT NULL DEFAULT '',
    keywords       text[] NOT NULL DEFAULT '{}',
    source         text NOT NULL CHECK (source IN ('routine', 'custom')),
    source_run_id  uuid,
    body           jsonb NOT NULL,
    version        bigint NOT NULL DEFAULT 1,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    UNIQUE (workspace_id, name)
);
