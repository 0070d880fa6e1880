-- BPMN 2.0 workflows (issue 20): a workflow is a named line of versions.
-- Each version holds the semantic model (what the engine and agents read,
-- as `coordinator_bpmn::Definitions` JSON; diagram interchange and vendor
-- extensions ride along verbatim inside it) and, when it was imported, the
-- document as it arrived. Versions only grow: an instance keeps the version
-- it started with, so a version an instance started from is frozen and an
-- edit to it makes the next version instead.
CREATE TABLE workflows (
    id              uuid PRIMARY KEY,
    workspace_id    uuid NOT NULL REFERENCES workspaces (id),
    name            text NOT NULL,
    description     text NOT NULL DEFAULT '',
    -- The venture it belongs to, if any (seed 000 §14.2 `business_id`).
    business_id     text,
    latest_version  integer NOT NULL DEFAULT 1 CHECK (latest_version >= 1),
    created_by      text NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
-- Listing is newest first within a workspace, keyset-paged by id (UUIDv7,
-- so id order is creation order).
CREATE INDEX IF NOT EXISTS workflows_workspace ON workflows (workspace_id, id DESC);

CREATE TABLE workflow_versions (
    workflow_id     uuid NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
    version         integer NOT NULL CHECK (version >= 1),
    model           jsonb NOT NULL,
    -- The imported document, byte for byte (decoded to text); NULL for
    -- versions made by editing, whose XML is exported from the model.
    source_xml      text,
    frozen          boolean NOT NULL DEFAULT false,
    created_by      text NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workflow_id, version)
);
