/**
 * Session notes: what a dashboard session must see once on its next page, kept on the server so that no page that
 * shows it is the answer to a POST (POST/redirect/GET): a new API key (sealed with the operator's key) shown once on
 * the Developers page, or the page a failed form answered with, shown once where the form redirected to. A note
 * lives ten minutes at most and ends with its session.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE session_notes (
      id text PRIMARY KEY,
      session_id text NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
      -- 'key': a new API key of \`mode\`, sealed; 'page': a rendered page and its status, for \`path\`
      kind text NOT NULL CHECK (kind IN ('key', 'page')),
      mode text CHECK (mode IN ('test', 'live')),
      path text,
      status integer,
      body text NOT NULL,
      created_at timestamptz NOT NULL,
      expires_at timestamptz NOT NULL
    );
    CREATE INDEX session_notes_session ON session_notes (session_id);
    CREATE INDEX session_notes_expiry ON session_notes (expires_at);
  `.execute(db);
}
