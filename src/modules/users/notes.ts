/**
 * Session notes: what a dashboard session sees once on its next page, kept on the server so that every page that
 * shows it answers a GET (POST/redirect/GET) and a reload neither repeats the action nor shows it again.
 *
 * - `key`: a new API key, sealed with the operator's key until the Developers page of its mode shows it once.
 * - `page`: the page a failed form answered with (its status and document), shown once at the address the form
 *   redirected to (`?form=<id>`); a reload of that address shows the page afresh.
 *
 * A note is read and deleted in one statement, so two tabs cannot both show it; it lives ten minutes at most and is
 * deleted with its session.
 */
import { randomBytes } from 'node:crypto';
import { MINUTE, type Clock } from '../../core/clock.ts';
import type { Mode } from '../../core/mode.ts';
import { decryptSecret, encryptSecret } from '../../core/secrets.ts';
import type { Db, DbOrTx } from '../../db/index.ts';

export const NOTE_TTL_MS = 10 * MINUTE;
/** A page larger than this is answered directly instead of being kept (it is never a failed form's page). */
export const NOTE_PAGE_MAX = 2_000_000;

export interface PageNote {
  status: number;
  body: string;
}

export class SessionNotes {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly secretKey: Buffer,
  ) {}

  /** Keeps a new API key of `mode` for the session's next Developers page (in `db`: the transaction that made it). */
  async putKey(sessionId: string, mode: Mode, key: string, db: DbOrTx = this.db): Promise<void> {
    await this.put(db, sessionId, {
      kind: 'key',
      mode,
      path: null,
      status: null,
      body: encryptSecret(this.secretKey, key),
    });
  }

  /** The key kept for this session and mode, once; null when there is none. */
  async takeKey(sessionId: string, mode: Mode): Promise<string | null> {
    const row = await this.db
      .deleteFrom('session_notes')
      .where('session_id', '=', sessionId)
      .where('kind', '=', 'key')
      .where('mode', '=', mode)
      .where('expires_at', '>', this.clock.now())
      .returning('body')
      .executeTakeFirst();
    return row ? decryptSecret(this.secretKey, row.body) : null;
  }

  /** Keeps a page for the session's next GET of `path`; answers the note's id (the `form` parameter). */
  async putPage(sessionId: string, path: string, page: PageNote): Promise<string> {
    return this.put(this.db, sessionId, { kind: 'page', mode: null, path, status: page.status, body: page.body });
  }

  /** The page kept under `id` for this session and path, once; null when there is none (a reload). */
  async takePage(sessionId: string, path: string, id: string): Promise<PageNote | null> {
    if (!/^[A-Za-z0-9_-]{22}$/.test(id)) return null;
    const row = await this.db
      .deleteFrom('session_notes')
      .where('id', '=', id)
      .where('session_id', '=', sessionId)
      .where('kind', '=', 'page')
      .where('path', '=', path)
      .where('expires_at', '>', this.clock.now())
      .returning(['status', 'body'])
      .executeTakeFirst();
    return row ? { status: row.status ?? 200, body: row.body } : null;
  }

  private async put(
    db: DbOrTx,
    sessionId: string,
    n: { kind: 'key' | 'page'; mode: Mode | null; path: string | null; status: number | null; body: string },
  ): Promise<string> {
    const now = this.clock.now();
    const id = randomBytes(16).toString('base64url');
    await db.deleteFrom('session_notes').where('expires_at', '<=', now).execute();
    if (n.kind === 'key')
      await db
        .deleteFrom('session_notes')
        .where('session_id', '=', sessionId)
        .where('kind', '=', 'key')
        .where('mode', '=', n.mode)
        .execute();
    await db
      .insertInto('session_notes')
      .values({ id, session_id: sessionId, ...n, created_at: now, expires_at: new Date(now.getTime() + NOTE_TTL_MS) })
      .execute();
    return id;
  }
}
