/**
 * The column definitions the migrations repeat, as SQL to interpolate into a migration's `sql` template: every
 * tenant table starts with the same id, merchant and mode columns, and every chain table is keyed by mode and
 * chain. A released migration uses them only where the schema it makes stays exactly the same.
 */
import { sql } from 'kysely';

const MODE = `mode text NOT NULL CHECK (mode IN ('test', 'live'))`;

/** A row of a mode: test and live data never mix. */
export const mode = sql.raw(MODE);

/** A row of one merchant in one mode. */
export const merchantMode = sql.raw(`merchant_id text NOT NULL REFERENCES merchants(id),\n      ${MODE}`);

/** A merchant's object: its id, then its merchant and mode. */
export const tenant = sql.raw(
  `id text PRIMARY KEY,\n      merchant_id text NOT NULL REFERENCES merchants(id),\n      ${MODE}`,
);

/** A row of one network (chain) in one mode. */
export const network = sql.raw(`${MODE},\n      chain text NOT NULL`);
