-- A NOTIFY makes its transaction take one database-wide lock at commit and
-- hold it through the commit's WAL flush, so every transaction that wrote
-- events committed strictly one after another: across committers and
-- replicas, group commit could not merge their flushes. The engine's hot
-- transactions (claims, report batches) now set
-- `coordinator.events_notify = 'deferred'` and, after they commit, their
-- replica sends one coalesced NOTIFY on a connection of its own. Every other
-- writer of events still notifies here, as before.
CREATE OR REPLACE FUNCTION coordinator_notify_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('coordinator.events_notify', true) IS DISTINCT FROM 'deferred' THEN
        PERFORM pg_notify('coordinator_events', '');
    END IF;
    RETURN NULL;
END
$$;
