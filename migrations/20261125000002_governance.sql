-- Coordination layer, part 2: governance (stakeholder profiles, the decision
-- queue) and contract-net tenders. Every row carries its workspace;
-- transitions are guarded by `version` (or the status they leave) and write
-- their event in the same transaction.

-- One governance profile per workspace (the workspace is the "business" of
-- the seed). NULL thresholds mean "no rule of that kind".
CREATE TABLE stakeholder_profiles (
    workspace_id              uuid PRIMARY KEY REFERENCES workspaces (id),
    stakeholder_id            text NOT NULL CHECK (length(stakeholder_id) BETWEEN 1 AND 128),
    decision_style            text NOT NULL CHECK (decision_style IN ('hands-on', 'strategic-only', 'exception-based')),
    risk_tolerance            text NOT NULL CHECK (risk_tolerance IN ('conservative', 'moderate', 'aggressive')),
    budget_threshold          double precision CHECK (budget_threshold >= 0),
    budget_currency           text NOT NULL DEFAULT 'USD',
    hiring_threshold          integer CHECK (hiring_threshold >= 0),
    strategy_rule             text NOT NULL DEFAULT 'always' CHECK (strategy_rule IN ('always', 'never')),
    auto_approve_categories   text[] NOT NULL DEFAULT '{}',
    communication_preferences jsonb NOT NULL DEFAULT '{}',
    updated_by                text NOT NULL,
    version                   bigint NOT NULL DEFAULT 1,
    created_at                timestamptz NOT NULL DEFAULT now(),
    updated_at                timestamptz NOT NULL DEFAULT now()
);

-- The decision queue. pending → approved | rejected | modified (final) or
-- deferred; a deferred decision is re-checked at `recheck_at` and goes back
-- to pending (or is approved when the rules no longer require approval).
CREATE TABLE governance_decisions (
    id                  uuid PRIMARY KEY,
    workspace_id        uuid NOT NULL REFERENCES workspaces (id),
    -- Who asked (actor string) and, when an agent asked, which one: it gets
    -- the INFORM when the decision is resolved.
    requester           text NOT NULL,
    requester_agent_id  text,
    mission_id          uuid REFERENCES orchestration_runs (id) ON DELETE CASCADE,
    task_id             uuid REFERENCES orchestration_tasks (id) ON DELETE CASCADE,
    category            text NOT NULL,
    description         text NOT NULL,
    impact_analysis     jsonb NOT NULL DEFAULT '{}',
    options             jsonb NOT NULL DEFAULT '[]',
    recommended_option  text,
    estimated_cost      double precision,
    headcount           integer,
    -- The governance check that sent it here (reason, threshold, modifier).
    governance_check    jsonb NOT NULL DEFAULT '{}',
    status              text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'rejected', 'deferred', 'modified')),
    resolver            text,
    rationale           text,
    conditions          jsonb NOT NULL DEFAULT '[]',
    modifications       jsonb NOT NULL DEFAULT '{}',
    resolved_at         timestamptz,
    recheck_at          timestamptz,
    recheck_count       integer NOT NULL DEFAULT 0,
    version             bigint NOT NULL DEFAULT 1,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (workspace_id, requester_agent_id) REFERENCES agents (workspace_id, agent_id)
);
CREATE INDEX governance_decisions_queue ON governance_decisions (workspace_id, status, created_at);
CREATE INDEX governance_decisions_recheck ON governance_decisions (recheck_at) WHERE status = 'deferred';
-- A task waits on at most one open decision: two replicas gating the same
-- task cannot both create one.
CREATE UNIQUE INDEX governance_decisions_open_task ON governance_decisions (task_id)
    WHERE task_id IS NOT NULL AND status IN ('pending', 'deferred');

-- Task-level governance and allocation. `action_category` is the declared
-- category (else `inputs.action_category`); `approved_by_decision` marks a
-- task the gate has cleared, so retries do not ask again; `allocation`
-- overrides the mission's.
ALTER TABLE orchestration_tasks ADD COLUMN action_category text;
ALTER TABLE orchestration_tasks ADD COLUMN approved_by_decision uuid;
ALTER TABLE orchestration_tasks ADD COLUMN allocation text CHECK (allocation IN ('score', 'tender'));
ALTER TABLE orchestration_runs ADD COLUMN allocation text NOT NULL DEFAULT 'score' CHECK (allocation IN ('score', 'tender'));
ALTER TABLE orchestration_runs ADD COLUMN tender_window_ms integer NOT NULL DEFAULT 30000 CHECK (tender_window_ms BETWEEN 100 AND 86400000);

-- Contract-net calls for proposals. open → awarded (a winner is pinned to
-- the task) or no_proposals (the task falls back to scoring).
CREATE TABLE tenders (
    id               uuid PRIMARY KEY,
    workspace_id     uuid NOT NULL REFERENCES workspaces (id),
    mission_id       uuid NOT NULL REFERENCES orchestration_runs (id) ON DELETE CASCADE,
    task_id          uuid NOT NULL REFERENCES orchestration_tasks (id) ON DELETE CASCADE,
    initiator        text NOT NULL,
    description      text NOT NULL,
    required_skills  text[] NOT NULL DEFAULT '{}',
    eligible_agents  text[] NOT NULL DEFAULT '{}',
    deadline         timestamptz NOT NULL,
    status           text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'awarded', 'no_proposals')),
    -- When worker endpoints were asked (`POST {endpoint}/v1/cfp`); NULL: not yet.
    solicited_at     timestamptz,
    winner_agent_id  text,
    winning_proposal uuid,
    award_details    jsonb,
    closed_by        text,
    closed_at        timestamptz,
    version          bigint NOT NULL DEFAULT 1,
    created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX tenders_workspace ON tenders (workspace_id, status, created_at);
CREATE INDEX tenders_unsolicited ON tenders (created_at) WHERE status = 'open' AND solicited_at IS NULL;
CREATE UNIQUE INDEX tenders_open_task ON tenders (task_id) WHERE status = 'open';

CREATE TABLE tender_proposals (
    id                 uuid PRIMARY KEY,
    tender_id          uuid NOT NULL REFERENCES tenders (id) ON DELETE CASCADE,
    workspace_id       uuid NOT NULL,
    agent_id           text NOT NULL,
    capability_match   double precision NOT NULL CHECK (capability_match BETWEEN 0 AND 1),
    matched_skills     text[] NOT NULL DEFAULT '{}',
    additional_skills  text[] NOT NULL DEFAULT '{}',
    estimated_effort   double precision NOT NULL CHECK (estimated_effort >= 0),
    estimated_cost     double precision NOT NULL CHECK (estimated_cost >= 0),
    confidence         double precision NOT NULL CHECK (confidence BETWEEN 0 AND 1),
    conditions         text[] NOT NULL DEFAULT '{}',
    via                text NOT NULL DEFAULT 'api' CHECK (via IN ('api', 'endpoint')),
    submitted_by       text NOT NULL,
    submitted_at       timestamptz NOT NULL DEFAULT now(),
    -- One proposal per agent per tender: a resend is idempotent.
    UNIQUE (tender_id, agent_id),
    FOREIGN KEY (workspace_id, agent_id) REFERENCES agents (workspace_id, agent_id)
);
