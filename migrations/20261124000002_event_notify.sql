-- Live event streams wake on NOTIFY. The engine's own wake-ups
-- ('coordinator_wake') cover reports and mission starts but not claims
-- (task.dispatched), approvals-to-be or other API writes, which left those
-- events to the streams' one-second recheck. A statement-level trigger on
-- the event log notifies a separate channel, so every event wakes streams
-- at commit (NOTIFY folds duplicates within a transaction) and the engine,
-- which listens on 'coordinator_wake' only, is not woken more often.
CREATE FUNCTION coordinator_notify_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('coordinator_events', '');
    RETURN NULL;
END
$$;
CREATE TRIGGER orchestration_events_notify AFTER INSERT ON orchestration_events
    FOR EACH STATEMENT EXECUTE FUNCTION coordinator_notify_events();
