-- Plan library (case-based reasoning): every mission that finishes
-- `completed` (a success case) or `failed` (a negative case) is stored as a
-- case, in the same transaction as its terminal transition. Cancelled
-- missions say nothing about their plan and are not stored.
--
-- problem  = goal + context (constraints, budget, autonomy)
-- solution = plan (a PlanSpec, revalidated before any reuse) and its
--            structure signature (task types and typed edges: same shape,
--            same signature), plus the provenance of the plan
-- outcome  = success, outcome facts (status, task counts, cost, duration,
--            failure reason) and lessons derived from the task records
CREATE TABLE plan_cases (
    id              uuid PRIMARY KEY,
    workspace_id    uuid NOT NULL REFERENCES workspaces (id),
    -- The mission the case was learned from: one case per mission. No
    -- foreign key: a lesson should outlive the mission's own records.
    run_id          uuid NOT NULL UNIQUE,
    goal            text NOT NULL,
    context         jsonb NOT NULL DEFAULT '{}',
    plan            jsonb NOT NULL,
    structure       text NOT NULL,
    planner         text,
    template        text,
    success         boolean NOT NULL,
    outcome         jsonb NOT NULL DEFAULT '{}',
    lessons         text[] NOT NULL DEFAULT '{}',
    created_at      timestamptz NOT NULL DEFAULT now()
);
-- The planner reads a workspace's most recent cases; search filters by outcome.
CREATE INDEX plan_cases_workspace ON plan_cases (workspace_id, success, created_at DESC);
CREATE INDEX plan_cases_recent ON plan_cases (workspace_id, created_at DESC);
