-- BDI state per agent (beliefs, desires, goals, intentions), the BDI
-- maintenance job's records, and missions' commitment strategies.
-- Formulas and thresholds: src/bdi and docs/bdi.md.

-- A belief: what an agent holds true about a subject, with a certainty.
-- One row per (agent, category, subject); revisions follow the seed's rule
-- (higher certainty wins, a tie with different content is flagged).
CREATE TABLE bdi_beliefs (
    id              uuid PRIMARY KEY,
    workspace_id    uuid NOT NULL REFERENCES workspaces (id),
    agent_id        text NOT NULL,
    category        text NOT NULL CHECK (category IN ('environment', 'self', 'agent', 'case')),
    subject         text NOT NULL CHECK (length(subject) BETWEEN 1 AND 256),
    content         text NOT NULL CHECK (length(content) BETWEEN 1 AND 4000),
    certainty       double precision NOT NULL CHECK (certainty BETWEEN 0 AND 1),
    -- Set when a revision with equal certainty but different content came in.
    conflict        boolean NOT NULL DEFAULT false,
    version         bigint NOT NULL DEFAULT 1,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (workspace_id, agent_id) REFERENCES agents (workspace_id, agent_id),
    UNIQUE (workspace_id, agent_id, category, subject)
);
-- Conflict detection walks an agent's beliefs by subject.
CREATE INDEX bdi_beliefs_subject ON bdi_beliefs (workspace_id, agent_id, subject);

-- Every write to a belief, accepted or not.
CREATE TABLE bdi_belief_revisions (
    id              bigserial PRIMARY KEY,
    workspace_id    uuid NOT NULL REFERENCES workspaces (id),
    belief_id       uuid NOT NULL REFERENCES bdi_beliefs (id) ON DELETE CASCADE,
    outcome         text NOT NULL CHECK (outcome IN ('created', 'corroborated', 'revised', 'rejected', 'conflict')),
    old_content     text,
    new_content     text NOT NULL,
    old_certainty   double precision,
    new_certainty   double precision NOT NULL,
    reason          text NOT NULL DEFAULT '',
    actor           text NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX bdi_belief_revisions_belief ON bdi_belief_revisions (workspace_id, belief_id, id);

-- A desire with the components of the seed's priority formula (§6.2).
CREATE TABLE bdi_desires (
    id                  uuid PRIMARY KEY,
    workspace_id        uuid NOT NULL REFERENCES workspaces (id),
    agent_id            text NOT NULL,
    description         text NOT NULL CHECK (length(description) BETWEEN 1 AND 4000),
    kind                text NOT NULL CHECK (kind IN ('terminal', 'instrumental')),
    base_priority       double precision NOT NULL CHECK (base_priority BETWEEN 0 AND 1),
    importance          double precision NOT NULL CHECK (importance BETWEEN 0 AND 1),
    urgency             double precision NOT NULL CHECK (urgency BETWEEN 0 AND 1),
    strategic_alignment double precision NOT NULL CHECK (strategic_alignment BETWEEN 0 AND 1),
    dependency_status   double precision NOT NULL CHECK (dependency_status BETWEEN 0 AND 1),
    -- The formula's value, recomputed on every write and by the maintenance job.
    priority            double precision NOT NULL CHECK (priority BETWEEN 0 AND 1),
    -- 1 = highest priority among the agent's active desires (maintenance job).
    rank                integer,
    -- Desires this (instrumental) one is a means to.
    serves              uuid[] NOT NULL DEFAULT '{}',
    -- Scarce resources it needs (resource conflicts).
    resources           text[] NOT NULL DEFAULT '{}',
    -- Strategic direction it pulls towards (strategy conflicts).
    strategy            text,
    -- Desires that achieving this one makes impossible (goal conflicts).
    incompatible_with   uuid[] NOT NULL DEFAULT '{}',
    status              text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'dropped')),
    version             bigint NOT NULL DEFAULT 1,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (workspace_id, agent_id) REFERENCES agents (workspace_id, agent_id),
    CHECK (kind = 'instrumental' OR cardinality(serves) = 0)
);
CREATE INDEX bdi_desires_agent ON bdi_desires (workspace_id, agent_id, status, priority DESC);

-- The seed's drop record (§6.4), one per dropped desire (cascaded ones too).
CREATE TABLE bdi_desire_drops (
    id                       bigserial PRIMARY KEY,
    workspace_id             uuid NOT NULL REFERENCES workspaces (id),
    desire_id                uuid NOT NULL REFERENCES bdi_desires (id),
    dropped_at               timestamptz NOT NULL DEFAULT now(),
    reason                   text NOT NULL,
    related_desires_affected uuid[] NOT NULL DEFAULT '{}',
    cascaded_drops           uuid[] NOT NULL DEFAULT '{}',
    -- For a cascaded drop: the desire whose drop caused it.
    cascade_of               uuid,
    actor                    text NOT NULL,
    UNIQUE (workspace_id, desire_id)
);

-- Goals by tier, with parents (strategic ⊇ tactical ⊇ operational).
CREATE TABLE bdi_goals (
    id               uuid PRIMARY KEY,
    workspace_id     uuid NOT NULL REFERENCES workspaces (id),
    agent_id         text NOT NULL,
    description      text NOT NULL CHECK (length(description) BETWEEN 1 AND 4000),
    tier             text NOT NULL CHECK (tier IN ('strategic', 'tactical', 'operational')),
    parent_goal_id   uuid REFERENCES bdi_goals (id),
    desire_id        uuid REFERENCES bdi_desires (id),
    success_criteria text NOT NULL DEFAULT '',
    deadline         timestamptz,
    status           text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'achieved', 'abandoned')),
    version          bigint NOT NULL DEFAULT 1,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (workspace_id, agent_id) REFERENCES agents (workspace_id, agent_id)
);
CREATE INDEX bdi_goals_agent ON bdi_goals (workspace_id, agent_id, created_at);

-- Intentions: committed desires/goals with a commitment strategy (§7).
CREATE TABLE bdi_intentions (
    id                    uuid PRIMARY KEY,
    workspace_id          uuid NOT NULL REFERENCES workspaces (id),
    agent_id              text NOT NULL,
    description           text NOT NULL CHECK (length(description) BETWEEN 1 AND 4000),
    goal_id               uuid REFERENCES bdi_goals (id),
    desire_id             uuid REFERENCES bdi_desires (id),
    strategy              text NOT NULL CHECK (strategy IN ('single-minded', 'open-minded', 'cautious')),
    priority              double precision NOT NULL CHECK (priority BETWEEN 0 AND 1),
    progress              double precision NOT NULL DEFAULT 0 CHECK (progress BETWEEN 0 AND 1),
    status                text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'suspended', 'dropped', 'achieved')),
    -- Set by the maintenance job when the intention stalled past its strategy's threshold.
    needs_reconsideration boolean NOT NULL DEFAULT false,
    last_progress_at      timestamptz NOT NULL DEFAULT now(),
    version               bigint NOT NULL DEFAULT 1,
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (workspace_id, agent_id) REFERENCES agents (workspace_id, agent_id)
);
CREATE INDEX bdi_intentions_agent ON bdi_intentions (workspace_id, agent_id, status);
CREATE INDEX bdi_intentions_stalled ON bdi_intentions (last_progress_at) WHERE status = 'active';

-- One row per maintenance cycle that ran (the audit record, §5.7/§16).
CREATE TABLE bdi_cycles (
    id                  bigserial PRIMARY KEY,
    started_at          timestamptz NOT NULL,
    finished_at         timestamptz NOT NULL DEFAULT now(),
    replica             text NOT NULL,
    intentions_pruned   integer NOT NULL,
    desires_resorted    integer NOT NULL,
    beliefs_scanned     integer NOT NULL,
    belief_chunks       integer NOT NULL,
    conflicts_found     integer NOT NULL
);

-- Belief conflicts found by the maintenance job, one per pair per day.
CREATE TABLE bdi_conflicts (
    id            bigserial PRIMARY KEY,
    workspace_id  uuid NOT NULL REFERENCES workspaces (id),
    agent_id      text NOT NULL,
    subject       text NOT NULL,
    belief_a      uuid NOT NULL REFERENCES bdi_beliefs (id) ON DELETE CASCADE,
    belief_b      uuid NOT NULL REFERENCES bdi_beliefs (id) ON DELETE CASCADE,
    content_a     text NOT NULL,
    content_b     text NOT NULL,
    certainty_a   double precision NOT NULL,
    certainty_b   double precision NOT NULL,
    detected_on   date NOT NULL,
    detected_at   timestamptz NOT NULL DEFAULT now(),
    cycle_id      bigint REFERENCES bdi_cycles (id),
    CHECK (belief_a < belief_b),
    UNIQUE (workspace_id, belief_a, belief_b, detected_on)
);
CREATE INDEX bdi_conflicts_day ON bdi_conflicts (workspace_id, detected_on, id);

-- Missions are intentions: NULL derives the strategy from autonomy.
ALTER TABLE orchestration_runs
    ADD COLUMN commitment_strategy text
        CHECK (commitment_strategy IN ('single-minded', 'open-minded', 'cautious'));
