-- Organisation specs (MOISE+): one per workspace, stored as the validated
-- JSON document (roles with cardinality, groups, links, missions with goals,
-- norms). The engine reads it per claim batch and enforces its norms in the
-- scorer; `version` guards concurrent uploads.
CREATE TABLE org_specs (
    workspace_id uuid PRIMARY KEY REFERENCES workspaces (id),
    spec         jsonb NOT NULL,
    version      bigint NOT NULL DEFAULT 1,
    updated_by   text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);

-- Cardinality counts live agents per role.
CREATE INDEX agents_role ON agents (workspace_id, role) WHERE status <> 'offline';
