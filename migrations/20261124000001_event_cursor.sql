-- Workspace-wide event streams need an order in which events become
-- visible. Global ids are handed out before commit, so a reader that saw id
-- 11 may later see id 10 appear. Recording the writing transaction's id lets
-- a reader take only events of transactions older than every transaction
-- still running (pg_snapshot_xmin), in (xid, id) order: that order never
-- grows behind a cursor, so nothing is skipped or repeated.
ALTER TABLE orchestration_events ADD COLUMN xid xid8 NOT NULL DEFAULT pg_current_xact_id();
DROP INDEX orchestration_events_workspace;
CREATE INDEX orchestration_events_commit_order ON orchestration_events (workspace_id, xid, id);
-- Retention deletes by age; BRIN stays tiny on an append-only table.
CREATE INDEX orchestration_events_age ON orchestration_events USING brin (created_at);

-- Outbound webhooks: an external tool (a kanban board, a chat bot) follows
-- the workspace's events. Each hook keeps its own cursor into the event log,
-- so deliveries are derived from the events, never lost, and any replica can
-- do them.
CREATE TABLE webhooks (
    id            uuid PRIMARY KEY,
    workspace_id  uuid NOT NULL REFERENCES workspaces (id),
    url           text NOT NULL,
    -- Event kinds to deliver; empty means every card change (task.*).
    event_kinds   text[] NOT NULL DEFAULT '{}',
    secret        text NOT NULL,
    active        boolean NOT NULL DEFAULT true,
    -- Commit-ordered cursor into orchestration_events: (xid, id) of the last event considered.
    cursor_xid    xid8 NOT NULL DEFAULT '0',
    cursor_id     bigint NOT NULL DEFAULT 0,
    created_by    text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhooks_workspace ON webhooks (workspace_id) WHERE active;

-- One row per (hook, event): the delivery log, and the retry queue.
CREATE TABLE webhook_deliveries (
    id               bigserial PRIMARY KEY,
    webhook_id       uuid NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_id         bigint NOT NULL,
    event_kind       text NOT NULL,
    body             jsonb NOT NULL,
    status           text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts         integer NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    last_status      integer,
    last_error       text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    delivered_at     timestamptz,
    UNIQUE (webhook_id, event_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
