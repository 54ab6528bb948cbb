/**
 * The API listeners (live and test). Each is its own Fastify instance bound to one mode: the mode of a request
 * is the listener's, never the key's. Every non-2xx answer carries the Error body; every `/v1` route except the
 * OpenAPI document and its reference page requires a bearer key of this listener's mode and is rate limited.
 */
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type {
  FastifyBaseLogger,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import { sql } from 'kysely';
import type { Mode } from '../core/mode.ts';
import { ApiError, type ErrorBody } from '../core/errors.ts';
import type { Kasse } from '../kasse.ts';
import type { AuthenticatedKey } from '../modules/merchants/index.ts';
import type { RateDecision } from '../modules/ratelimit/index.ts';
import { documentErrors } from './openapi.ts';
import referenceRoutes from './reference.ts';
import { blockedRange } from '../core/addresses.ts';
import { apiRoutes } from './routes/index.ts';
import { ErrorSchema } from './schemas/common.ts';
import { baseFastify, instrument, sendError, type Hook } from './frame.ts';
import { closedQuery } from './validation.ts';

export type ApiApp = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

declare module 'fastify' {
  interface FastifyRequest {
    auth: AuthenticatedKey;
  }
}

export interface ApiDeps {
  kasse: Kasse;
  mode: Mode;
}

/** The token of an `Authorization: Bearer …` header. */
function bearerToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  // The usual spelling without a regex; any other (case, spacing) through the full pattern.
  if (header.startsWith('Bearer ') && header.indexOf(' ', 7) < 0) return header.slice(7);
  return /^bearer\s+(\S+)\s*$/i.exec(header)?.[1];
}

/**
 * The API listeners' guard: bearer auth and the rate limit. With the key cached and allowance leased (nearly every
 * request) it decides without waiting; otherwise it asks the database. A route marked `limit: 'x402'` (the x402
 * facilitator's) counts against the key's own x402 allowance, sized for machine traffic, in a window of its own; every
 * other route against the key's API limit (the spec's 60 a minute by default).
 */
function keyGuard(kasse: Kasse, mode: Mode): (limit: 'api' | 'x402') => Hook {
  return (limit) =>
    limit === 'x402'
      ? guardOf(
          kasse,
          mode,
          (key) => `x402:${key.keyId}`,
          (key) => key.x402RateLimit,
        )
      : guardOf(
          kasse,
          mode,
          (key) => key.keyId,
          (key) => key.rateLimit,
        );
}

function guardOf(
  kasse: Kasse,
  mode: Mode,
  bucket: (key: AuthenticatedKey) => string,
  allowance: (key: AuthenticatedKey) => number,
): Hook {
  const admit = (req: FastifyRequest, reply: FastifyReply, key: AuthenticatedKey, rate: RateDecision) => {
    // Strings: Node would otherwise convert each number twice (validation, then the header block).
    reply.header('ratelimit-limit', String(rate.limit));
    reply.header('ratelimit-remaining', String(rate.remaining));
    reply.header('ratelimit-reset', String(rate.resetSeconds));
    if (!rate.allowed) {
      throw new ApiError(
        'rate_limited',
        `Rate limit of ${rate.limit} requests per minute exceeded; retry in ${rate.resetSeconds} s.`,
        null,
        {
          'Retry-After': String(rate.resetSeconds),
        },
      );
    }
    req.auth = key;
  };
  const checkMode = (key: AuthenticatedKey) => {
    if (key.mode !== mode) {
      throw new ApiError(
        'wrong_mode',
        `A ${key.mode} key cannot be used on the ${mode} API; use a kasse_${mode}_ key.`,
      );
    }
  };
  const admitSlowly = async (req: FastifyRequest, reply: FastifyReply, token: string | undefined) => {
    const key = await kasse.merchants.authenticate(token);
    checkMode(key);
    admit(req, reply, key, await kasse.rateLimiter.take(bucket(key), allowance(key)));
  };
  return (req, reply, done) => {
    const token = bearerToken(req.headers.authorization);
    try {
      const key = kasse.merchants.authenticateCached(token);
      if (key) {
        checkMode(key);
        const rate = kasse.rateLimiter.tryTake(bucket(key), allowance(key));
        if (rate) {
          admit(req, reply, key, rate);
          return done();
        }
      }
    } catch (err) {
      return done(err as Error);
    }
    admitSlowly(req, reply, token).then(() => done(), done);
  };
}

export async function buildApiServer({ kasse, mode }: ApiDeps): Promise<ApiApp> {
  const app = baseFastify(kasse).withTypeProvider<TypeBoxTypeProvider>();
  // Every route needs a key of this listener's mode unless it is marked public.
  instrument(app, kasse, mode, keyGuard(kasse, mode));
  app.decorateRequest('auth', null as unknown as AuthenticatedKey);
  // Every operation refuses query parameters it does not define, the same way (400, `param` naming it).
  app.addHook('onRoute', (route) => {
    route.schema = { ...route.schema, querystring: closedQuery(route.schema?.querystring) };
  });

  app.addSchema(ErrorSchema);
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: `Kasse ${mode} API`,
        version: '1',
        description: `Crypto payments API (${mode} mode). Authenticate with \`Authorization: Bearer kasse_${mode}_…\`. Every non-2xx answer carries the Error body.`,
      },
      components: {
        securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: `A kasse_${mode}_ API key` } },
      },
      security: [{ bearer: [] }],
    },
    refResolver: {
      buildLocalReference: (json, _base, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`),
    },
  });

  // Operations probes live outside /v1 and need no key.
  const open = { schema: { hide: true }, config: { public: true } };
  app.get('/healthz', open, async () => ({ status: 'ok' }));
  app.get('/readyz', open, async (_req, reply) => {
    try {
      await sql`SELECT 1`.execute(kasse.db);
      return { status: 'ready' };
    } catch {
      return sendError(reply, new ApiError('service_unavailable', 'Database is not reachable'));
    }
  });
  app.get('/metrics', open, async (req, reply) => {
    const token = kasse.config.metricsToken;
    const ok = token
      ? req.headers.authorization === `Bearer ${token}`
      : req.socket.remoteAddress !== undefined && blockedRange(req.socket.remoteAddress) === 'loopback';
    if (!ok)
      return sendError(reply, new ApiError('unauthorized', 'Metrics need KASSE_METRICS_TOKEN or a loopback client'));
    reply.header('content-type', kasse.metrics.registry.contentType);
    return kasse.metrics.registry.metrics();
  });

  // The OpenAPI document and its reference page answer without a key.
  await app.register(referenceRoutes, { kasse, mode } satisfies ApiDeps);

  await app.register(
    async (v1) => {
      // Every documented operation lists the error responses it can answer, so no route can forget one.
      v1.addHook('onRoute', documentErrors);
      for (const route of apiRoutes) await v1.register(route, { kasse, mode } satisfies ApiDeps);
    },
    { prefix: '/v1' },
  );
  return app;
}

export type { ErrorBody };
