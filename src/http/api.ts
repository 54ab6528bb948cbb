/**
 * The API listeners (live and test). Each is its own Fastify instance bound to one mode: the mode of a request
 * is the listener's, never the key's. Every non-2xx answer carries the Error body; every `/v1` route except the
 * OpenAPI document and its reference page requires a bearer key of this listener's mode and is rate limited.
 */
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { sql } from 'kysely';
import type { Mode } from '../chains/types.ts';
import { ApiError, type ErrorBody } from '../core/errors.ts';
import { requestIds } from '../core/ids.ts';
import type { Kasse } from '../kasse.ts';
import type { AuthenticatedKey } from '../modules/merchants/service.ts';
import type { RateDecision } from '../modules/ratelimit/limiter.ts';
import { renderReference } from './reference.ts';
import { blockedRange } from '../modules/webhooks/http-client.ts';
import { refuseUnparsable } from './client-errors.ts';
import { apiRoutes } from './routes/index.ts';
import { ErrorSchema, errorResponses } from './schemas/common.ts';
import { buildSerializer, closedQuery, explainValidation, freeFormKeys, validatorCompiler } from './validation.ts';

export type ApiApp = FastifyInstance<any, any, any, any, TypeBoxTypeProvider>;

declare module 'fastify' {
  interface FastifyRequest {
    auth: AuthenticatedKey;
  }
}

export interface ApiDeps {
  kasse: Kasse;
  mode: Mode;
}

export function sendError(reply: FastifyReply, err: ApiError): FastifyReply {
  reply.header('request-id', reply.request.id);
  for (const [k, v] of Object.entries(err.headers)) reply.header(k, v);
  return reply.code(err.status).send(err.toBody());
}

/** Maps anything thrown in a request to the Error body. Shared by the checkout listener. */
export function errorHandler(log: Kasse['log']) {
  return (err: FastifyError, req: FastifyRequest, reply: FastifyReply) => {
    if (err instanceof ApiError) return sendError(reply, err);
    if (err.validation && err.validation.length > 0) {
      const { param, message } = explainValidation(err.validation as never, err.validationContext);
      return sendError(reply, new ApiError('invalid_request', message, param));
    }
    switch (err.code) {
      case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
        return sendError(reply, new ApiError('invalid_request', 'Content-Type must be application/json'));
      case 'FST_ERR_CTP_BODY_TOO_LARGE':
        return sendError(reply, new ApiError('invalid_request', `Request body is too large (at most ${req.routeOptions.bodyLimit} bytes)`));
      case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
        return sendError(reply, new ApiError('invalid_request', 'Content-Length does not match the body'));
    }
    if (err instanceof SyntaxError || err.code === 'FST_ERR_CTP_INVALID_JSON_BODY') {
      return sendError(reply, new ApiError('invalid_request', 'Request body is not valid JSON'));
    }
    // PostgreSQL data exceptions (class 22: a NUL character in text, a value out of range) are bad input, not faults.
    if (typeof err.code === 'string' && /^22[0-9A-Z]{3}$/.test(err.code)) {
      return sendError(reply, new ApiError('invalid_request', 'A value in the request cannot be stored (for example a NUL character or an out-of-range number).'));
    }
    if (typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) {
      return sendError(reply, new ApiError('invalid_request', err.message));
    }
    log.error({ err, reqId: req.id, method: req.method, url: req.url }, 'unhandled error');
    return sendError(reply, new ApiError('internal_error', `An unexpected error occurred. Quote request id ${req.id} when reporting it.`));
  };
}

export function notFoundHandler(req: FastifyRequest, reply: FastifyReply) {
  if (lacksHost(req)) return sendError(reply, missingHost());
  return sendError(reply, new ApiError('not_found', `No route ${req.method} ${req.url.split('?')[0]}`));
}

/** HTTP/1.1 requires a Host header (RFC 9112 §3.2); Node's own refusal of one without it has no body, so Kasse refuses it. */
const lacksHost = (req: FastifyRequest) => req.headers.host === undefined && req.raw.httpVersion === '1.1';
const missingHost = () => new ApiError('invalid_request', 'An HTTP/1.1 request needs a Host header.', 'Host');

/** JSON bodies: the framework's safe parser, but an empty body counts as no body (POST …/cancel). */
function jsonParser(app: FastifyInstance) {
  const parse = app.getDefaultJsonParser('error', 'error');
  return (req: FastifyRequest, body: string, done: (err: Error | null, value?: unknown) => void) => {
    if (body === '' || /^\s+$/.test(body)) return done(null, undefined);
    parse(req, body, done);
  };
}

/** Successful reads quicker than this are logged at debug; everything else at info. */
const SLOW_MS = 1000;

type Hook = (req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => void;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** On an API listener, the route answers without a key (probes, metrics, the OpenAPI document). */
    public?: boolean;
  }
  interface FastifyRequest {
    /** The matched route's URL pattern (the metrics label); null when no route matched. */
    routeUrl: string | null;
  }
}

/**
 * What every listener does on every request: the request id header, metrics, the access log and, given a guard
 * (the API listeners' key check), admission. Every request is counted and timed in the metrics. The access log
 * records at info every change (any method but GET and HEAD), every failure and every slow answer; successful quick
 * reads are logged at debug, as polling them would otherwise drown the log and cost more than answering them.
 *
 * This runs on every request, so it is one hook per route, added as the route is declared: it knows its route's URL
 * (reading `request.routeOptions` would build an object per request) and whether the guard applies, which every
 * route but those marked `config: { public: true }` needs. Hooks take callbacks rather than returning promises, as a
 * promise per hook costs a microtask. Answers made before any route hook (unknown route, malformed URL) get their
 * request id in `sendError`.
 */
export function instrument(app: FastifyInstance, kasse: Kasse, listener: string, guard?: Hook): void {
  app.decorateRequest('routeUrl', null);
  app.addHook('onRoute', (route) => {
    const url = route.url;
    const check = guard && !route.config?.public ? guard : undefined;
    // Lower case, as Fastify would make it: a name that already is costs no new string per request.
    const hook: Hook = (req, reply, done) => {
      reply.header('request-id', req.id);
      req.routeUrl = url;
      if (lacksHost(req)) done(missingHost());
      else if (check) check(req, reply, done);
      else done();
    };
    const own = route.onRequest ? [route.onRequest].flat() : [];
    route.onRequest = [hook, ...own] as never;
  });
  const record = kasse.metrics.http.recorder(listener);
  app.addHook('onResponse', (req, reply, done) => {
    const route = req.routeUrl ?? 'unmatched';
    const status = reply.statusCode;
    const ms = reply.elapsedTime;
    record(route, status, ms / 1000);
    const level = (req.method === 'GET' || req.method === 'HEAD') && status < 400 && ms < SLOW_MS ? 'debug' : 'info';
    if (kasse.log.isLevelEnabled(level)) {
      kasse.log[level]({ reqId: req.id, listener, method: req.method, route, status, ms: Math.round(ms * 10) / 10 }, 'request');
    }
    done();
  });
}

/** The token of an `Authorization: Bearer …` header. */
function bearerToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  // The usual spelling without a regex; any other (case, spacing) through the full pattern.
  if (header.startsWith('Bearer ') && header.indexOf(' ', 7) < 0) return header.slice(7);
  return /^bearer\s+(\S+)\s*$/i.exec(header)?.[1];
}

/**
 * The logger handed to Fastify. Requests log through the root logger with the request id as a field: a child logger
 * per request would cost more than the access log line itself. The framework asks for a child on every request, so
 * this logger's child is itself. (Fastify checks the result of a custom child factory on every request, which is why
 * the override sits on the logger instead.)
 */
function requestLogger(log: Kasse['log']): FastifyBaseLogger {
  const logger = log.child({});
  logger.child = (() => logger) as never;
  return logger as unknown as FastifyBaseLogger;
}

const nextRequestId = requestIds();

export function baseFastify(kasse: Kasse): FastifyInstance {
  const app = Fastify({
    loggerInstance: requestLogger(kasse.log),
    // Kasse writes its own access log (see `instrument`).
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: nextRequestId,
    bodyLimit: kasse.config.bodyLimitBytes,
    // While closing, requests on open connections are still served; new connections are refused by the closed socket.
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    trustProxy: true,
    routerOptions: { ignoreTrailingSlash: true },
    // Through the factory, not only setValidatorCompiler: a plugin that calls addSchema gets a validator rebuilt
    // from the factory, which would otherwise be Fastify's default Ajv (strips unknown properties instead of 400).
    // The serialiser likewise, so that it reads the schemas as the validator does (`freeFormKeys`).
    schemaController: { compilersFactory: { buildValidator: () => validatorCompiler as never, buildSerializer: buildSerializer as never } },
    // Errors Fastify raises before routing (a malformed URL) get the Error body too, and so do requests Node's HTTP
    // parser refuses; an HTTP/1.1 request without Host reaches the routes, which refuse it the same way.
    frameworkErrors: (err, _req, reply) => sendError(reply, new ApiError('invalid_request', err.message)),
    clientErrorHandler: refuseUnparsable(kasse.log, nextRequestId),
    http: { requireHostHeader: false },
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setErrorHandler(errorHandler(kasse.log));
  app.setNotFoundHandler(notFoundHandler);
  app.removeContentTypeParser(['text/plain']);
  app.removeContentTypeParser(['application/json']);
  app.addContentTypeParser('application/json', { parseAs: 'string' }, jsonParser(app));
  return app;
}

/**
 * The API listeners' guard: bearer auth and the rate limit. With the key cached and allowance leased (nearly every
 * request) it decides without waiting; otherwise it asks the database.
 */
function keyGuard(kasse: Kasse, mode: Mode): Hook {
  const admit = (req: FastifyRequest, reply: FastifyReply, key: AuthenticatedKey, rate: RateDecision) => {
    // Strings: Node would otherwise convert each number twice (validation, then the header block).
    reply.header('ratelimit-limit', String(rate.limit));
    reply.header('ratelimit-remaining', String(rate.remaining));
    reply.header('ratelimit-reset', String(rate.resetSeconds));
    if (!rate.allowed) {
      throw new ApiError('rate_limited', `Rate limit of ${rate.limit} requests per minute exceeded; retry in ${rate.resetSeconds} s.`, null, {
        'Retry-After': String(rate.resetSeconds),
      });
    }
    req.auth = key;
  };
  const checkMode = (key: AuthenticatedKey) => {
    if (key.mode !== mode) {
      throw new ApiError('wrong_mode', `A ${key.mode} key cannot be used on the ${mode} API; use a kasse_${mode}_ key.`);
    }
  };
  const admitSlowly = async (req: FastifyRequest, reply: FastifyReply, token: string | undefined) => {
    const key = await kasse.merchants.authenticate(token);
    checkMode(key);
    admit(req, reply, key, await kasse.rateLimiter.take(key.keyId, key.rateLimit));
  };
  return (req, reply, done) => {
    const token = bearerToken(req.headers.authorization);
    try {
      const key = kasse.merchants.authenticateCached(token);
      if (key) {
        checkMode(key);
        const rate = kasse.rateLimiter.tryTake(key.keyId, key.rateLimit);
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
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: `A kasse_${mode}_ API key` } } },
      security: [{ bearer: [] }],
    },
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
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
    const token = process.env.KASSE_METRICS_TOKEN;
    const ok = token ? req.headers.authorization === `Bearer ${token}` : req.socket.remoteAddress !== undefined && blockedRange(req.socket.remoteAddress) === 'loopback';
    if (!ok) return sendError(reply, new ApiError('unauthorized', 'Metrics need KASSE_METRICS_TOKEN or a loopback client'));
    reply.header('content-type', kasse.metrics.registry.contentType);
    return kasse.metrics.registry.metrics();
  });

  // The OpenAPI document and its reference page answer without a key. The servers entry is filled at answer time
  // (with port 0 the bound port is known only after listen), and paths are relative to the server URL, which
  // already ends in /v1.
  const document = () => {
    const doc = app.swagger() as { paths?: Record<string, unknown> };
    const paths = Object.fromEntries(Object.entries(doc.paths ?? {}).map(([p, ops]) => [p.replace(/^\/v1(?=\/)/, ''), ops]));
    return freeFormKeys({ ...doc, servers: [{ url: kasse.apiBase(mode) }], paths });
  };
  app.get('/v1/openapi.json', open, async () => document());
  app.get('/v1/docs', open, async (_req, reply) => {
    reply.header('content-type', 'text/html; charset=utf-8');
    reply.header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'");
    return renderReference(document() as never);
  });

  await app.register(
    async (v1) => {
      // Every documented operation lists the spec's error responses, so no route can forget one.
      v1.addHook('onRoute', (route) => {
        const schema = route.schema as { hide?: boolean; response?: Record<string, unknown> } | undefined;
        if (schema && !schema.hide) schema.response = { ...errorResponses(), ...schema.response };
      });
      for (const route of apiRoutes) await v1.register(route, { kasse, mode } satisfies ApiDeps);
    },
    { prefix: '/v1' },
  );
  return app;
}

export type { ErrorBody };
