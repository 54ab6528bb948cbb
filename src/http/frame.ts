/**
 * The HTTP frame every listener shares (the live and test APIs, the checkout host and anything served beside it):
 * a Fastify instance with the JSON parser, validator and limits set, request ids, per-route metrics and the access
 * log (`instrument`), and the one error envelope — every failure, whatever raised it, answers with the Error body
 * and its request id. The API listeners add their key guard through `instrument`; the other listeners use it as is.
 */
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import { ApiError } from '../core/errors.ts';
import { requestIds } from '../core/ids.ts';
import type { Logger } from '../core/log.ts';
import type { Metrics } from '../core/metrics.ts';
import { refuseUnparsable } from './client-errors.ts';
import { buildSerializer, explainValidation, refuseIllFormedText, validatorCompiler } from './validation.ts';

/** What the frame needs from the service container. */
export interface FrameDeps {
  log: Logger;
  metrics: Metrics;
  config: { bodyLimitBytes: number };
}

export function sendError(reply: FastifyReply, err: ApiError): FastifyReply {
  reply.header('request-id', reply.request.id);
  for (const [k, v] of Object.entries(err.headers)) reply.header(k, v);
  return reply.code(err.status).send(err.toBody());
}

/** Maps anything thrown in a request to the Error body. Shared by the checkout listener. */
export function errorHandler(log: Logger) {
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
        return sendError(
          reply,
          new ApiError('invalid_request', `Request body is too large (at most ${req.routeOptions.bodyLimit} bytes)`),
        );
      case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
        return sendError(reply, new ApiError('invalid_request', 'Content-Length does not match the body'));
    }
    if (err instanceof SyntaxError || err.code === 'FST_ERR_CTP_INVALID_JSON_BODY') {
      return sendError(reply, new ApiError('invalid_request', 'Request body is not valid JSON'));
    }
    // PostgreSQL data exceptions (class 22: a NUL character in text, a value out of range) are bad input, not faults.
    if (typeof err.code === 'string' && /^22[0-9A-Z]{3}$/.test(err.code)) {
      return sendError(
        reply,
        new ApiError(
          'invalid_request',
          'A value in the request cannot be stored (for example a NUL character or an out-of-range number).',
        ),
      );
    }
    if (typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) {
      return sendError(reply, new ApiError('invalid_request', err.message));
    }
    log.error({ err, reqId: req.id, method: req.method, url: req.url }, 'unhandled error');
    return sendError(
      reply,
      new ApiError('internal_error', `An unexpected error occurred. Quote request id ${req.id} when reporting it.`),
    );
  };
}

export function notFoundHandler(req: FastifyRequest, reply: FastifyReply) {
  if (lacksHost(req)) return sendError(reply, missingHost());
  return sendError(reply, new ApiError('not_found', `No route ${req.method} ${req.url.split('?')[0]}`));
}

/** HTTP/1.1 requires a Host header (RFC 9112 §3.2); Node's own refusal of one without it has no body, so Kasse refuses it. */
const lacksHost = (req: FastifyRequest) => req.headers.host === undefined && req.raw.httpVersion === '1.1';
const missingHost = () => new ApiError('invalid_request', 'An HTTP/1.1 request needs a Host header.', 'Host');

/**
 * JSON bodies: the framework's safe parser, but an empty body counts as no body (POST …/cancel), and text that is not
 * well-formed Unicode is refused here, before validation, for every route (`refuseIllFormedText`).
 */
function jsonParser(app: FastifyInstance) {
  const parse = app.getDefaultJsonParser('error', 'error');
  return (req: FastifyRequest, body: string, done: (err: Error | null, value?: unknown) => void) => {
    if (body === '' || /^\s+$/.test(body)) return done(null, undefined);
    parse(req, body, (err, value) => (err ? done(err) : done(refuseIllFormedText(body, value), value)));
  };
}

/** Successful reads quicker than this are logged at debug; everything else at info. */
const SLOW_MS = 1000;

export type Hook = (req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => void;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** On an API listener, the route answers without a key (probes, metrics, the OpenAPI document). */
    public?: boolean;
    /** On an API listener, the limit the route counts against: the key's own one (default) or its x402 one. */
    limit?: 'api' | 'x402';
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
export function instrument(
  app: FastifyInstance,
  deps: FrameDeps,
  listener: string,
  guard?: (limit: 'api' | 'x402') => Hook,
): void {
  app.decorateRequest('routeUrl', null);
  app.addHook('onRoute', (route) => {
    const url = route.url;
    const check = guard && !route.config?.public ? guard(route.config?.limit ?? 'api') : undefined;
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
  const record = deps.metrics.http.recorder(listener);
  app.addHook('onResponse', (req, reply, done) => {
    const route = req.routeUrl ?? 'unmatched';
    const status = reply.statusCode;
    const ms = reply.elapsedTime;
    record(route, status, ms / 1000);
    const level = (req.method === 'GET' || req.method === 'HEAD') && status < 400 && ms < SLOW_MS ? 'debug' : 'info';
    if (deps.log.isLevelEnabled(level)) {
      deps.log[level](
        { reqId: req.id, listener, method: req.method, route, status, ms: Math.round(ms * 10) / 10 },
        'request',
      );
    }
    done();
  });
}

/**
 * The logger handed to Fastify. Requests log through the root logger with the request id as a field: a child logger
 * per request would cost more than the access log line itself. The framework asks for a child on every request, so
 * this logger's child is itself. (Fastify checks the result of a custom child factory on every request, which is why
 * the override sits on the logger instead.)
 */
function requestLogger(log: Logger): FastifyBaseLogger {
  const logger = log.child({});
  logger.child = (() => logger) as never;
  return logger as unknown as FastifyBaseLogger;
}

const nextRequestId = requestIds();

export function baseFastify(deps: FrameDeps): FastifyInstance {
  const app = Fastify({
    loggerInstance: requestLogger(deps.log),
    // Kasse writes its own access log (see `instrument`).
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: nextRequestId,
    bodyLimit: deps.config.bodyLimitBytes,
    // While closing, requests on open connections are still served; new connections are refused by the closed socket.
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    trustProxy: true,
    routerOptions: { ignoreTrailingSlash: true },
    // Through the factory, not only setValidatorCompiler: a plugin that calls addSchema gets a validator rebuilt
    // from the factory, which would otherwise be Fastify's default Ajv (strips unknown properties instead of 400).
    // The serialiser likewise, so that it reads the schemas as the validator does (`freeFormKeys`).
    schemaController: {
      compilersFactory: { buildValidator: () => validatorCompiler as never, buildSerializer: buildSerializer as never },
    },
    // Errors Fastify raises before routing (a malformed URL) get the Error body too, and so do requests Node's HTTP
    // parser refuses; an HTTP/1.1 request without Host reaches the routes, which refuse it the same way.
    frameworkErrors: (err, _req, reply) => sendError(reply, new ApiError('invalid_request', err.message)),
    clientErrorHandler: refuseUnparsable(deps.log, nextRequestId),
    http: { requireHostHeader: false },
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setErrorHandler(errorHandler(deps.log));
  app.setNotFoundHandler(notFoundHandler);
  app.removeContentTypeParser(['text/plain']);
  app.removeContentTypeParser(['application/json']);
  app.addContentTypeParser('application/json', { parseAs: 'string' }, jsonParser(app));
  return app;
}
