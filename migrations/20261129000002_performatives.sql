-- Performatives with effects (issue 18): AGREE, REFUSE and FAILURE join the
-- ACL performatives, and a REQUEST or QUERY addressed to one agent becomes a
-- work item the recipient answers (agent_requests), settled by the reply
-- that answers it, in the same transaction as that reply.

ALTER TABLE agent_messages DROP CONSTRAINT agent_messages_performative_check;
ALTER TABLE agent_messages ADD CONSTRAINT agent_messages_performative_check
    CHECK (performative IN ('REQUEST', 'INFORM', 'QUERY', 'PROPOSE', 'ACCEPT', 'REJECT',
                            'CONFIRM', 'CANCEL', 'AGREE', 'REFUSE', 'FAILURE'));

-- One row per REQUEST or QUERY to one agent; its id is the message's.
CREATE TABLE agent_requests (
    id               uuid PRIMARY KEY REFERENCES agent_messages (id) ON DELETE CASCADE,
    workspace_id     uuid NOT NULL REFERENCES workspaces (id),
    kind             text NOT NULL CHECK (kind IN ('request', 'query')),
    conversation_id  uuid NOT NULL,
    -- Who asked, as an actor string ('agent:<id>', 'operator:…').
    requester        text NOT NULL,
    -- The agent asked.
    recipient        text NOT NULL,
    mission_id       uuid REFERENCES orchestration_runs (id) ON DELETE SET NULL,
    task_id          uuid,
    subject          text NOT NULL DEFAULT '',
    content          jsonb NOT NULL DEFAULT '{}',
    status           text NOT NULL DEFAULT 'open'
                     CHECK (status IN ('open', 'agreed', 'refused', 'cancelled', 'done', 'failed', 'answered')),
    -- The message that last moved it (AGREE, REFUSE, CANCEL, INFORM, FAILURE).
    settled_by       uuid REFERENCES agent_messages (id) ON DELETE SET NULL,
    -- Key of the task an AGREE within a mission added.
    added_task       text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (workspace_id, recipient) REFERENCES agents (workspace_id, agent_id)
);
CREATE INDEX agent_requests_recipient ON agent_requests (workspace_id, recipient, status);
CREATE INDEX agent_requests_requester ON agent_requests (workspace_id, requester, status);
