/**
 * The test API's event stream (`GET /test/events/stream`): every committed test-mode event is announced with
 * `NOTIFY kasse_test_events, '<merchant id> <seq>'`. A trigger rather than a call in the publisher, so that every
 * path that writes an event announces it, whether or not it has a webhook URL. PostgreSQL delivers notifications at
 * commit and in commit order, which is the order the stream sends events in. Live events are not announced.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE FUNCTION kasse_announce_test_event() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('kasse_test_events', NEW.merchant_id || ' ' || NEW.seq);
      RETURN NULL;
    END
    $$;
    CREATE TRIGGER events_announce_test AFTER INSERT ON events
      FOR EACH ROW WHEN (NEW.mode = 'test') EXECUTE FUNCTION kasse_announce_test_event();
  `.execute(db);
}
