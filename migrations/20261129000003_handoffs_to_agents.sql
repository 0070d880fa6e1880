-- Agents act (issue 18): an agent hands its task to another agent, and an
-- agent blocked inside its task raises a decision for a stakeholder.
--
-- A third handoff direction. `attempt_id` is the attempt the handing agent
-- was working in (it ends, handed off, without counting as a failure).
ALTER TABLE handoffs DROP CONSTRAINT handoffs_direction_check;
ALTER TABLE handoffs ADD CONSTRAINT handoffs_direction_check
    CHECK (direction IN ('agent_to_human', 'human_to_agent', 'agent_to_agent'));
ALTER TABLE handoffs ADD COLUMN attempt_id uuid;

-- What a decision is about: the governance gate and agents' requests
-- (`governance`), or an agent blocked inside its task (`blocker`, seed 004's
-- Decision(topic=blocker)), whose task waits for the resolution and then
-- goes back to the queue with it. `chosen_option` is the option label the
-- resolver picked (approved or modified), handed to the agent.
ALTER TABLE governance_decisions
    ADD COLUMN topic text NOT NULL DEFAULT 'governance' CHECK (topic IN ('governance', 'blocker'));
ALTER TABLE governance_decisions ADD COLUMN chosen_option text;
