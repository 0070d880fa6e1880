-- An index under every foreign key whose referenced rows can go away.
--
-- `orchestration_task_dependencies` had no index on `run_id`, so reading a
-- mission's edges (every promotion check and every approval) scanned every
-- edge ever stored: over a 7-minute benchmark that statement went from
-- 3.8 ms to 59 ms a call and took throughput down to 0.40× of its start.
-- The other columns below are read by the cascades of a mission, task,
-- message, belief, desire, goal, cycle, reservation, work package or
-- contractor delete (`ON DELETE CASCADE` / `SET NULL` look the referencing
-- rows up by these columns), which without an index scan the whole table
-- once per deleted row.
--
-- Foreign keys into `agents` stay unindexed: agents are retired, never
-- deleted, so nothing looks rows up by them (tests/it/deploy.rs holds the
-- list and fails on any new foreign key without an index).
CREATE INDEX orchestration_task_dependencies_run_fk ON orchestration_task_dependencies (run_id);
CREATE INDEX task_attempts_run_fk ON task_attempts (run_id);
CREATE INDEX agent_messages_mission_fk ON agent_messages (mission_id);
CREATE INDEX agent_messages_reply_to_fk ON agent_messages (reply_to);
CREATE INDEX reservations_mission_fk ON reservations (mission_id);
CREATE INDEX reservations_taken_over_by_fk ON reservations (taken_over_by);
CREATE INDEX governance_decisions_mission_fk ON governance_decisions (mission_id);
CREATE INDEX tenders_mission_fk ON tenders (mission_id);
CREATE INDEX work_packages_mission_fk ON work_packages (mission_id);
CREATE INDEX trust_history_contractor_fk ON trust_history (contractor_id);
CREATE INDEX trust_history_work_package_fk ON trust_history (work_package_id);
CREATE INDEX handoffs_mission_fk ON handoffs (mission_id);
CREATE INDEX bdi_belief_revisions_belief_fk ON bdi_belief_revisions (belief_id);
CREATE INDEX bdi_desire_drops_desire_fk ON bdi_desire_drops (desire_id);
CREATE INDEX bdi_goals_desire_fk ON bdi_goals (desire_id);
CREATE INDEX bdi_goals_parent_fk ON bdi_goals (parent_goal_id);
CREATE INDEX bdi_intentions_desire_fk ON bdi_intentions (desire_id);
CREATE INDEX bdi_intentions_goal_fk ON bdi_intentions (goal_id);
CREATE INDEX bdi_conflicts_belief_a_fk ON bdi_conflicts (belief_a);
CREATE INDEX bdi_conflicts_belief_b_fk ON bdi_conflicts (belief_b);
CREATE INDEX bdi_conflicts_cycle_fk ON bdi_conflicts (cycle_id);
CREATE INDEX tool_approval_requests_run_fk ON tool_approval_requests (run_id);
CREATE INDEX tool_approval_requests_task_fk ON tool_approval_requests (task_id);
CREATE INDEX team_decisions_mission_fk ON team_decisions (mission_id);
CREATE INDEX team_decisions_task_fk ON team_decisions (task_id);
CREATE INDEX agent_requests_mission_fk ON agent_requests (mission_id);
CREATE INDEX agent_requests_settled_by_fk ON agent_requests (settled_by);

-- Statements that read a growing or per-mission set with no index to serve
-- them (tests/it/deploy.rs explains every statement of the service with
-- sequential scans disabled and fails on a scan it does not allow):
-- every mission transition (each completion, pause, cancel) and priority
-- change scanned the whole ready queue for the mission's rows,
CREATE INDEX task_queue_run ON task_queue (run_id);
-- and pruning webhook deliveries read every delivery still kept to find the
-- old ones.
CREATE INDEX webhook_deliveries_created ON webhook_deliveries (created_at);
