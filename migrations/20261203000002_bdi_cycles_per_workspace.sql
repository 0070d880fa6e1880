-- The BDI maintenance job's cycles are a workspace's own.
--
-- A job cycle used to cover every workspace and leave one record with no
-- workspace, which `GET /v1/bdi/maintenance` showed to every caller: counts
-- of other tenants' intentions, desires and beliefs. The job now runs over
-- one workspace at a time and records each (workspace set, agent unset);
-- an agent's own cycle still has both. Records written before this
-- migration keep neither and are no longer shown.
ALTER TABLE bdi_cycles DROP CONSTRAINT bdi_cycles_agent_scope;
ALTER TABLE bdi_cycles ADD CONSTRAINT bdi_cycles_scope CHECK (agent_id IS NULL OR workspace_id IS NOT NULL);
CREATE INDEX bdi_cycles_workspace ON bdi_cycles (workspace_id, id DESC) WHERE agent_id IS NULL;
