-- Missions can be edited and removed (issue 23). PATCH changes what is safe
-- to change after creation (title, priority, budget limit, deadline,
-- labels); DELETE removes a finished mission with everything that hangs off
-- it (the foreign keys cascade), or with ?archive=true only hides it from
-- the list.

ALTER TABLE orchestration_runs
    -- A short name for people, shown instead of the goal where space is
    -- short (lists, the board); NULL: the goal is the name.
    ADD COLUMN title text CHECK (title IS NULL OR char_length(title) BETWEEN 1 AND 200),
    -- When the mission should be done. Informative: nothing is cancelled
    -- when it passes.
    ADD COLUMN deadline timestamptz,
    -- Short slugs to group and find missions by (the service checks their
    -- shape; the bound here keeps a row small whatever writes it).
    ADD COLUMN labels text[] NOT NULL DEFAULT '{}' CHECK (cardinality(labels) <= 20),
    -- When the mission was archived: kept with its history, but left out of
    -- GET /v1/missions unless ?archived=true. NULL: it is not.
    ADD COLUMN archived_at timestamptz;

-- The list reads a workspace's unarchived missions newest first.
CREATE INDEX orchestration_runs_list_unarchived
    ON orchestration_runs (workspace_id, id DESC) WHERE archived_at IS NULL;
