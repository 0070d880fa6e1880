-- Running BPMN workflows (issue 20). An instance runs one frozen version of
-- one workflow; its state (tokens, scopes, variables, history) is the pure
-- runner's `coordinator_bpmn::run::Instance` as JSON, changed only under
-- the row's lock and its version, one command per transaction.
CREATE TABLE workflow_instances (
    id              uuid PRIMARY KEY,
    workspace_id    uuid NOT NULL REFERENCES workspaces (id),
    workflow_id     uuid NOT NULL,
    version         integer NOT NULL,
    process_id      text NOT NULL,
    status          text NOT NULL
                    CHECK (status IN ('running', 'completed', 'terminated', 'failed')),
    state           jsonb NOT NULL,
    -- The work handed out: token id (as text) -> {mission_id} for an agent
    -- task (a mission of one task), {human: {...}} for a person's task.
    work            jsonb NOT NULL DEFAULT '{}',
    business_key    text,
    -- A call activity's child: the calling instance and its waiting token.
    parent_id       uuid REFERENCES workflow_instances (id) ON DELETE CASCADE,
    parent_token    bigint,
    row_version     bigint NOT NULL DEFAULT 1,
    created_by      text NOT NULL,
    -- The token that started it: the missions of its agent tasks are created in its name.
    created_token   uuid,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    finished_at     timestamptz,
    -- A workflow with instances cannot be deleted from under them.
    FOREIGN KEY (workflow_id, version) REFERENCES workflow_versions (workflow_id, version)
);
CREATE INDEX IF NOT EXISTS workflow_instances_workspace ON workflow_instances (workspace_id, id DESC);
CREATE INDEX IF NOT EXISTS workflow_instances_version ON workflow_instances (workflow_id, version);
CREATE INDEX IF NOT EXISTS workflow_instances_parent ON workflow_instances (parent_id);

-- Where each token of a running instance waits, projected from its state at
-- every change: the durable side of timers, message and signal
-- subscriptions and agent work, so any replica finds what is due.
CREATE TABLE workflow_tokens (
    instance_id     uuid NOT NULL REFERENCES workflow_instances (id) ON DELETE CASCADE,
    token           bigint NOT NULL,
    workspace_id    uuid NOT NULL,
    node_id         text NOT NULL,
    wait            text NOT NULL,
    due_at          timestamptz,
    message_name    text,
    correlation     text,
    signal_name     text,
    mission_id      uuid,
    PRIMARY KEY (instance_id, token)
);
CREATE INDEX IF NOT EXISTS workflow_tokens_due ON workflow_tokens (due_at) WHERE due_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS workflow_tokens_messages ON workflow_tokens (workspace_id, message_name)
    WHERE message_name IS NOT NULL;
CREATE INDEX IF NOT EXISTS workflow_tokens_signals ON workflow_tokens (workspace_id, signal_name)
    WHERE signal_name IS NOT NULL;
CREATE INDEX IF NOT EXISTS workflow_tokens_missions ON workflow_tokens (mission_id) WHERE mission_id IS NOT NULL;
-- Calls waiting for a child: the pump finds those whose child ended.
CREATE INDEX IF NOT EXISTS workflow_tokens_called ON workflow_tokens (instance_id, token) WHERE wait = 'called';

-- Messages and signals thrown by instances, delivered by the pump in a
-- transaction of their own (never while the thrower's row is locked, so
-- instances never lock each other).
CREATE TABLE workflow_outbox (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace_id    uuid NOT NULL REFERENCES workspaces (id),
    kind            text NOT NULL CHECK (kind IN ('message', 'signal')),
    name            text NOT NULL,
    correlation     text,
    payload         jsonb NOT NULL DEFAULT 'null',
    from_instance   uuid,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS workflow_outbox_workspace ON workflow_outbox (workspace_id);
