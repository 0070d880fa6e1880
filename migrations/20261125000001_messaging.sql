-- Coordination layer, part 1: agent messages, reservations, event
-- subscriptions. Every row carries its workspace; transitions are guarded by
-- the state they leave, and write their event in the same transaction.

-- FIPA-style ACL messages. One row per message; who received it, and how far
-- each recipient got (unread → read → acked), lives in message_recipients, so
-- a broadcast is one message with many inbox entries.
CREATE TABLE agent_messages (
    id               uuid PRIMARY KEY,
    workspace_id     uuid NOT NULL REFERENCES workspaces (id),
    conversation_id  uuid NOT NULL,
    reply_to         uuid REFERENCES agent_messages (id),
    -- The sending agent; NULL when the coordinator or a person sent it
    -- (contract-net awards, governance notices), named by `sender`.
    from_agent       text,
    sender           text NOT NULL,
    -- 'agent:<id>', 'role:<role>' or 'all': what the sender addressed.
    addressed_to     text NOT NULL,
    performative     text NOT NULL CHECK (performative IN ('REQUEST', 'INFORM', 'QUERY', 'PROPOSE', 'ACCEPT', 'REJECT', 'CONFIRM', 'CANCEL')),
    category         text CHECK (category IN ('HANDOFF', 'BLOCKED', 'DECISION', 'INFO')),
    mission_id       uuid REFERENCES orchestration_runs (id) ON DELETE SET NULL,
    task_id          uuid,
    subject          text NOT NULL DEFAULT '',
    content          jsonb NOT NULL DEFAULT '{}',
    requires_ack     boolean NOT NULL DEFAULT false,
    created_by       text NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (workspace_id, from_agent) REFERENCES agents (workspace_id, agent_id)
);
CREATE INDEX agent_messages_conversation ON agent_messages (workspace_id, conversation_id, created_at);
CREATE INDEX agent_messages_task ON agent_messages (task_id) WHERE task_id IS NOT NULL;

CREATE TABLE message_recipients (
    message_id       uuid NOT NULL REFERENCES agent_messages (id) ON DELETE CASCADE,
    workspace_id     uuid NOT NULL,
    agent_id         text NOT NULL,
    state            text NOT NULL DEFAULT 'unread' CHECK (state IN ('unread', 'read', 'acked')),
    read_at          timestamptz,
    acked_at         timestamptz,
    -- Push to the agent's worker endpoint: 'none' (not pushed), 'pending',
    -- 'delivered', 'failed' (gave up) or 'unsupported' (endpoint said 404/405).
    push_state       text NOT NULL DEFAULT 'none' CHECK (push_state IN ('none', 'pending', 'delivered', 'failed', 'unsupported')),
    push_attempts    integer NOT NULL DEFAULT 0,
    push_next_at     timestamptz,
    push_last_error  text,
    PRIMARY KEY (message_id, agent_id),
    FOREIGN KEY (workspace_id, agent_id) REFERENCES agents (workspace_id, agent_id)
);
CREATE INDEX message_recipients_inbox ON message_recipients (workspace_id, agent_id, state);
CREATE INDEX message_recipients_push_due ON message_recipients (push_next_at) WHERE push_state = 'pending';

-- Advisory reservations of a work surface (a scope pattern) with a TTL.
-- Overlap between patterns is decided in Rust under a per-workspace
-- transaction lock, so two reservations of overlapping scopes never both
-- become active.
CREATE TABLE reservations (
    id            uuid PRIMARY KEY,
    workspace_id  uuid NOT NULL REFERENCES workspaces (id),
    scope         text NOT NULL CHECK (length(scope) BETWEEN 1 AND 256),
    agent_id      text NOT NULL,
    mission_id    uuid REFERENCES orchestration_runs (id) ON DELETE SET NULL,
    task_id       uuid,
    note          text NOT NULL DEFAULT '',
    state         text NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'released', 'expired')),
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL,
    ended_at      timestamptz,
    -- For an expired reservation: the one that took its scope over.
    taken_over_by uuid REFERENCES reservations (id),
    version       bigint NOT NULL DEFAULT 1,
    FOREIGN KEY (workspace_id, agent_id) REFERENCES agents (workspace_id, agent_id)
);
CREATE INDEX reservations_active ON reservations (workspace_id, expires_at) WHERE state = 'active';
CREATE INDEX reservations_agent ON reservations (workspace_id, agent_id, state);

-- Agent event subscriptions are webhooks owned by an agent: delivered to its
-- endpoint by the same pump, with the same cursor, retries and log.
ALTER TABLE webhooks ADD COLUMN agent_id text;
ALTER TABLE webhooks ADD COLUMN mission_id uuid;
ALTER TABLE webhooks ADD COLUMN agent_role text;
ALTER TABLE webhooks ADD FOREIGN KEY (workspace_id, agent_id) REFERENCES agents (workspace_id, agent_id);
CREATE INDEX webhooks_agent ON webhooks (workspace_id, agent_id) WHERE agent_id IS NOT NULL;
