/**
 * Small JSON Schema builders (TypeBox) shared by the objects modules render and the HTTP schemas that validate
 * requests: the same schema documents a field, validates it and types it (`Static<>`).
 */
import { Type, type TSchema } from 'typebox';

export const DateTime = (description?: string) => Type.String({ format: 'date-time', ...(description ? { description } : {}) });
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
/** A bigint amount in smallest units, as a decimal string. */
export const Amount = (description?: string) => Type.String({ pattern: '^\\d+$', ...(description ? { description } : {}) });
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
