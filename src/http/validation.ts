/**
 * Request validation with Ajv, compiled from the same TypeBox schemas that produce the OpenAPI document.
 * Bodies are validated strictly (no type coercion, unknown properties rejected, nothing silently removed);
 * query strings, path parameters and headers are coerced from text as HTTP requires.
 */
import SerializerSelector from '@fastify/fast-json-stringify-compiler';
import { Ajv, type ErrorObject } from 'ajv';
import addFormatsImport from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import { ApiError } from '../core/errors.ts';
import { freeFormKeys } from '../core/json-schema.ts';
import { illFormedText, mayHoldSurrogateEscape } from '../core/text.ts';

const addFormats = addFormatsImport as unknown as (ajv: Ajv) => Ajv;

function makeAjv(coerce: boolean): Ajv {
  const ajv = new Ajv({
    coerceTypes: coerce ? 'array' : false,
    removeAdditional: false,
    useDefaults: true,
    allErrors: false,
    strict: false,
  });
  addFormats(ajv);
  // RFC 3339 allows a leap second (":60") that JavaScript dates cannot hold; accept only instants Date can represent.
  const rfc3339 = ajv.formats['date-time'] as { validate: (s: string) => boolean } | ((s: string) => boolean);
  const check = typeof rfc3339 === 'function' ? rfc3339 : rfc3339.validate;
  ajv.addFormat('date-time', (s: string) => check(s) && !Number.isNaN(Date.parse(s)));
  return ajv;
}

const strictAjv = makeAjv(false);
const coercingAjv = makeAjv(true);

/**
 * Validators by part and schema text: the live and the test API register the same routes, and each schema is
 * compiled once per process (a validator keeps no state between calls).
 */
const validators = new Map<string, ReturnType<FastifySchemaCompiler<unknown>>>();

type Validate = ReturnType<FastifySchemaCompiler<unknown>> & { errors?: unknown };

function compiled(schema: unknown, strict: boolean): Validate {
  const closed = freeFormKeys(schema) as object;
  const key = `${strict ? 'body' : 'text'}:${JSON.stringify(closed)}`;
  let validate = validators.get(key);
  if (!validate) {
    validate = (strict ? strictAjv : coercingAjv).compile(closed) as Validate;
    validators.set(key, validate);
  }
  return validate;
}

/**
 * Fastify's validator compiler. Each validator is compiled at the first request that needs it, not when the route is
 * registered: most processes (a worker, a CLI command, a test file) serve few of the routes, and compiling all of
 * them took most of a listener's start. Ajv's `errors` are handed on as Fastify reads them, from the function.
 */
export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  let validate: Validate | null = null;
  const lazy: Validate = (data: unknown) => {
    validate ??= compiled(schema, httpPart === 'body');
    const result = validate(data);
    lazy.errors = validate.errors;
    return result;
  };
  return lazy;
};

/**
 * A type guard from a body schema, compiled at its first use like the routes' validators: for JSON that arrives other
 * than as a route's body (a header).
 */
export function bodyGuard<T>(schema: object): (value: unknown) => value is T {
  let validate: Validate | null = null;
  return (value): value is T => {
    validate ??= compiled(schema, true);
    return validate(value) === true;
  };
}

/**
 * The query schema of an API route that refuses unknown parameters: an empty one for a route that defines none,
 * and `additionalProperties: false` unless the route's schema says otherwise.
 */
export function closedQuery(schema: unknown): object {
  if (schema === undefined || schema === null) return NO_QUERY;
  const s = schema as Record<string, unknown>;
  return s.additionalProperties === undefined ? { ...s, additionalProperties: false } : s;
}

const NO_QUERY = { type: 'object', properties: {}, additionalProperties: false };

/**
 * Fastify's response serialiser (fast-json-stringify), compiled from the same schemas after `freeFormKeys`, at the
 * first answer that needs it (as validators are).
 */
export function buildSerializer(externalSchemas: unknown, options: unknown) {
  const compile = SerializerSelector()(freeFormKeys(externalSchemas), options as never);
  return (route: SerializerSelector.RouteDefinition) => {
    let serialize: ((data: unknown) => string) | null = null;
    return (data: unknown) => {
      serialize ??= compile({ ...route, schema: freeFormKeys(route.schema) }) as (data: unknown) => string;
      return serialize(data);
    };
  };
}

/** Dotted path of the offending field (`items.3.destination`), or the header/parameter name. */
export function paramOf(error: ErrorObject, context: string | undefined): string | null {
  const path = error.instancePath
    .split('/')
    .filter(Boolean)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  const params = error.params as Record<string, unknown>;
  if (error.keyword === 'required' && typeof params.missingProperty === 'string') path.push(params.missingProperty);
  if (error.keyword === 'additionalProperties' && typeof params.additionalProperty === 'string')
    path.push(params.additionalProperty);
  if (path.length === 0) return context === 'body' ? null : (context ?? null);
  // Header names are case-insensitive and arrive lower-cased; name them the way the API documents them.
  if (context === 'headers')
    return path.join('.').replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase());
  return path.join('.');
}

/**
 * Text that is not well-formed Unicode in a JSON body (a lone UTF-16 surrogate, spelt `\ud800` in JSON), for every
 * operation of every listener before anything reads the body: 400 `invalid_request` naming the field (`metadata.note`,
 * `items.3.label`), or for a bad key the object holding it (`metadata`; none for the body itself). Null when all the
 * text is well-formed. `json` is the raw body, so nearly every body is passed without a walk.
 */
export function refuseIllFormedText(json: string, body: unknown): ApiError | null {
  if (!mayHoldSurrogateEscape(json)) return null;
  const found = illFormedText(body);
  if (!found) return null;
  const param = found.path.length > 0 ? found.path.join('.') : null;
  const why = 'is not valid Unicode text (it holds an unpaired UTF-16 surrogate)';
  if (!found.key) return new ApiError('invalid_request', `${param ?? 'request body'} ${why}`, param);
  return new ApiError('invalid_request', `A property name in ${param ?? 'the request body'} ${why}`, param);
}

/**
 * The answer to a failed validation: the field and a message. Ajv reports each branch of a union (`"waiting" |
 * "paid" | …`, a value or null) before the union itself, so the first error alone would name one allowed value; when
 * every branch failed on the field itself, the message names them all.
 */
export function explainValidation(
  errors: ErrorObject[],
  context: string | undefined,
): { param: string | null; message: string } {
  const first = errors[0]!;
  const union = errors.find(
    (e) =>
      e.keyword === 'anyOf' && e.instancePath === first.instancePath && first.schemaPath.startsWith(`${e.schemaPath}/`),
  );
  if (union) {
    const branches = errors.filter((e) => e !== union && e.schemaPath.startsWith(`${union.schemaPath}/`));
    if (
      branches.every(
        (e) =>
          e.instancePath === union.instancePath &&
          (e.keyword === 'const' || e.keyword === 'type' || e.keyword === 'enum'),
      )
    ) {
      const param = paramOf(union, context);
      const field = param ?? 'request body';
      const values = branches.flatMap((e) => {
        const p = e.params as Record<string, unknown>;
        return e.keyword === 'const'
          ? [String(p.allowedValue)]
          : e.keyword === 'enum'
            ? (p.allowedValues as unknown[]).map(String)
            : [];
      });
      const types = branches
        .filter((e) => e.keyword === 'type')
        .map((e) => String((e.params as Record<string, unknown>).type));
      if (types.length === 0) return { param, message: `${field} must be one of ${values.join(', ')}` };
      const kinds = [
        ...values.map((v) => JSON.stringify(v)),
        ...types.map((t) => (t === 'null' ? 'null' : `of type ${t}`)),
      ];
      return { param, message: `${field} must be ${kinds.join(' or ')}` };
    }
  }
  const param = paramOf(first, context);
  return { param, message: messageOf(first, param, context) };
}

export function messageOf(error: ErrorObject, param: string | null, context?: string): string {
  const params = error.params as Record<string, unknown>;
  const field = param ?? 'request body';
  switch (error.keyword) {
    case 'required':
      return `${field} is required`;
    case 'additionalProperties':
      return context === 'querystring' ? `${field} is not a known query parameter` : `${field} is not a known property`;
    case 'type':
      return `${field} must be of type ${String(params.type)}`;
    case 'const':
      return `${field} must be ${JSON.stringify(params.allowedValue)}`;
    case 'enum':
      return `${field} must be one of ${(params.allowedValues as unknown[]).map(String).join(', ')}`;
    case 'anyOf':
      return `${field} has an invalid value`;
    default:
      return `${field} ${error.message ?? 'is invalid'}`;
  }
}
