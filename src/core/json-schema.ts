/**
 * Small JSON Schema builders (TypeBox) shared by the objects modules render and the HTTP schemas that validate
 * requests: the same schema documents a field, validates it and types it (`Static<>`).
 */
import { Type, type TSchema } from 'typebox';

export const DateTime = (description?: string) =>
  Type.String({ format: 'date-time', ...(description ? { description } : {}) });
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
/** A bigint amount in smallest units, as a decimal string. */
export const Amount = (description?: string) =>
  Type.String({ pattern: '^\\d+$', ...(description ? { description } : {}) });
/** One of a closed list of strings (`anyOf` of `const`s), typed as their union. */
export const Enum = <T extends string>(values: readonly T[], description?: string) =>
  Type.Unsafe<T>(
    Type.Union(
      values.map((v) => Type.Literal(v)),
      description ? { description } : {},
    ),
  );
/** A reference to a schema registered under `id` (an OpenAPI component), typed as the object it describes. */
export const Ref = <T>(id: string) => Type.Unsafe<T>({ $ref: `${id}#` });

/**
 * Objects with free-form keys (`metadata`) come out of TypeBox's `Record` as `patternProperties: {"^.*$": …}`. In a
 * JavaScript regular expression `.` matches no line terminator (\n, \r, U+2028, U+2029), so a key holding one
 * matches no pattern: the validator lets its value through unchecked, and the serialiser, which writes only the
 * properties a schema describes, drops it from the answer. Every schema the HTTP layer compiles (validation,
 * serialisation) or publishes (the OpenAPI document) goes through this first: a catch-all pattern becomes
 * `additionalProperties`, which every key matches. Results are memoised per schema object.
 */
export function freeFormKeys<T>(node: T): T {
  if (node === null || typeof node !== 'object') return node;
  let out = normalised.get(node);
  if (!out) {
    out = Array.isArray(node)
      ? node.map((v) => freeFormKeys(v))
      : normaliseObject(node as Record<string, unknown>, false);
    normalised.set(node, out);
  }
  return out as T;
}

const normalised = new WeakMap<object, unknown>();
const CATCH_ALL = new Set(['^.*$', '.*', '^(.*)$']);
/** Keywords whose value is data, not a schema (left as written). */
const DATA_KEYWORDS = new Set(['const', 'enum', 'default', 'examples', 'example']);
/** Keywords whose value maps names to schemas (any name is a schema, even "default"). */
const NAME_MAPS = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas']);

function normaliseObject(node: Record<string, unknown>, names: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) {
    if (!names && DATA_KEYWORDS.has(k)) out[k] = v;
    else if (!names && NAME_MAPS.has(k) && v !== null && typeof v === 'object' && !Array.isArray(v))
      out[k] = normaliseObject(v as Record<string, unknown>, true);
    else out[k] = freeFormKeys(v);
  }
  const patterns = out.patternProperties as Record<string, unknown> | undefined;
  const catchAll =
    !names && patterns && out.additionalProperties === undefined
      ? Object.keys(patterns).find((p) => CATCH_ALL.has(p))
      : undefined;
  if (catchAll !== undefined) {
    const { [catchAll]: any, ...rest } = patterns!;
    out.additionalProperties = any;
    if (Object.keys(rest).length > 0) out.patternProperties = rest;
    else delete out.patternProperties;
  }
  return out;
}
