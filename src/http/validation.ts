/**
 * Request validation with Ajv, compiled from the same TypeBox schemas that produce the OpenAPI document.
 * Bodies are validated strictly (no type coercion, unknown properties rejected, nothing silently removed);
 * query strings, path parameters and headers are coerced from text as HTTP requires.
 */
import { Ajv, type ErrorObject } from 'ajv';
import addFormatsImport from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';

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

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  const ajv = httpPart === 'body' ? strictAjv : coercingAjv;
  return ajv.compile(schema as object) as ReturnType<FastifySchemaCompiler<unknown>>;
};

/** Dotted path of the offending field (`items.3.destination`), or the header/parameter name. */
export function paramOf(error: ErrorObject, context: string | undefined): string | null {
  const path = error.instancePath
    .split('/')
    .filter(Boolean)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  const params = error.params as Record<string, unknown>;
  if (error.keyword === 'required' && typeof params.missingProperty === 'string') path.push(params.missingProperty);
  if (error.keyword === 'additionalProperties' && typeof params.additionalProperty === 'string') path.push(params.additionalProperty);
  if (path.length === 0) return context === 'body' ? null : (context ?? null);
  // Header names are case-insensitive and arrive lower-cased; name them the way the API documents them.
  if (context === 'headers') return path.join('.').replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase());
  return path.join('.');
}

export function messageOf(error: ErrorObject, param: string | null): string {
  const params = error.params as Record<string, unknown>;
  const field = param ?? 'request body';
  switch (error.keyword) {
    case 'required':
      return `${field} is required`;
    case 'additionalProperties':
      return `${field} is not a known property`;
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
