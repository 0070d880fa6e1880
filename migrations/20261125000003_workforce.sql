-- Coordination layer: the human workforce (contractors, trust, work
-- packages) and agent ⇄ human handoffs.
--
-- "Contractors" here are PEOPLE registered for delegated work. They are not
-- the mission-scoped contractor *agents* of the `agents` table
-- (kind = 'contractor'); hence the `workforce_` prefix.

CREATE TABLE workforce_contractors (
    id            uuid PRIMARY KEY,
    workspace_id  uuid NOT NULL REFERENCES workspaces (id),
    name          text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    skills        text[] NOT NULL DEFAULT '{}',
    hourly_rate   double precision NOT NULL DEFAULT 0 CHECK (hourly_rate >= 0),
    availability  text NOT NULL DEFAULT 'full-time' CHECK (availability IN ('full-time', 'part-time', 'on-call', 'unavailable')),
    contact       text NOT NULL DEFAULT '',
    -- Starts neutral; moves in steps of 0.1 on each completed package.
    trust_score   double precision NOT NULL DEFAULT 0.5 CHECK (trust_score BETWEEN 0 AND 1),
    version       bigint NOT NULL DEFAULT 1,
    created_by    text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX workforce_contractors_ws ON workforce_contractors (workspace_id, created_at, id);
CREATE INDEX workforce_contractors_skills ON workforce_contractors USING gin (skills);

CREATE TABLE work_packages (
    id               uuid PRIMARY KEY,
    workspace_id     uuid NOT NULL REFERENCES workspaces (id),
    title            text NOT NULL CHECK (length(title) BETWEEN 1 AND 200),
    description      text NOT NULL DEFAULT '',
    required_skills  text[] NOT NULL DEFAULT '{}',
    priority         text NOT NULL DEFAULT 'normal' CHECK (priority IN ('low', 'normal', 'high', 'critical')),
    deadline         date,
    budget           double precision CHECK (budget >= 0),
    status           text NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'open', 'assigned', 'in_progress', 'review', 'completed', 'cancelled')),
    contractor_id    uuid REFERENCES workforce_contractors (id),
    progress         integer NOT NULL DEFAULT 0 CHECK (progress BETWEEN 0 AND 100),
    -- [{at, by, text}], oldest first.
    notes            jsonb NOT NULL DEFAULT '[]',
    -- Auto-matching result of the last time the package entered `open`:
    -- [{contractor_id, name, skill_overlap, trust_score, score}], best first.
    candidates       jsonb NOT NULL DEFAULT '[]',
    -- [{status, at, by}]: when each status was entered.
    status_history   jsonb NOT NULL DEFAULT '[]',
    deliverable      jsonb,
    quality_rating   text,
    -- A mission task delegated to a person: it resumes when this completes.
    mission_id       uuid REFERENCES orchestration_runs (id) ON DELETE SET NULL,
    task_id          uuid,
    version          bigint NOT NULL DEFAULT 1,
    created_by       text NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX work_packages_ws ON work_packages (workspace_id, created_at, id);
CREATE INDEX work_packages_contractor ON work_packages (contractor_id) WHERE contractor_id IS NOT NULL;
-- At most one live package per delegated task.
CREATE UNIQUE INDEX work_packages_live_task ON work_packages (task_id)
    WHERE task_id IS NOT NULL AND status NOT IN ('completed', 'cancelled');

-- Every trust change, with the package and rating that caused it.
CREATE TABLE trust_history (
    id               bigserial PRIMARY KEY,
    workspace_id     uuid NOT NULL REFERENCES workspaces (id),
    contractor_id    uuid NOT NULL REFERENCES workforce_contractors (id),
    work_package_id  uuid REFERENCES work_packages (id),
    previous_score   double precision NOT NULL,
    new_score        double precision NOT NULL,
    quality_rating   text NOT NULL,
    reason           text NOT NULL DEFAULT '',
    created_by       text NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX trust_history_contractor ON trust_history (workspace_id, contractor_id, id);

-- Context handed between an agent and a person, linked to the task that
-- changed hands.
CREATE TABLE handoffs (
    id               uuid PRIMARY KEY,
    workspace_id     uuid NOT NULL REFERENCES workspaces (id),
    direction        text NOT NULL CHECK (direction IN ('agent_to_human', 'human_to_agent')),
    from_party       text NOT NULL,
    to_party         text NOT NULL,
    mission_id       uuid NOT NULL REFERENCES orchestration_runs (id) ON DELETE CASCADE,
    task_id          uuid NOT NULL,
    context_summary  text NOT NULL,
    active_tasks     jsonb NOT NULL DEFAULT '[]',
    open_decisions   jsonb NOT NULL DEFAULT '[]',
    artifacts        jsonb NOT NULL DEFAULT '[]',
    -- The status the task left and the one it entered.
    task_status_from text NOT NULL,
    task_status_to   text NOT NULL,
    -- human_to_agent: the HANDOFF message sent to the receiving agent.
    message_id       uuid,
    created_by       text NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX handoffs_task ON handoffs (workspace_id, task_id, created_at);
CREATE INDEX handoffs_ws ON handoffs (workspace_id, created_at, id);
