-- An agent can run a BDI cycle for itself (the `bdi_cycle` tool): the
-- cycle's audit record names the agent and holds what each phase did.
-- The scheduled maintenance cycle over every agent keeps both NULL.
ALTER TABLE bdi_cycles
    ADD COLUMN workspace_id uuid REFERENCES workspaces (id),
    ADD COLUMN agent_id     text,
    -- Per phase (perceive, deliberate, plan, act, learn): whether it ran and what it did.
    ADD COLUMN phases       jsonb,
    ADD CONSTRAINT bdi_cycles_agent_scope CHECK ((workspace_id IS NULL) = (agent_id IS NULL)),
    ADD CONSTRAINT bdi_cycles_agent_fk
        FOREIGN KEY (workspace_id, agent_id) REFERENCES agents (workspace_id, agent_id);
-- An agent's own cycles, newest first.
CREATE INDEX bdi_cycles_agent ON bdi_cycles (workspace_id, agent_id, id DESC) WHERE agent_id IS NOT NULL;
