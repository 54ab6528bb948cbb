/**
 * The OpenAPI document as readers and generators see it. Route schemas stay the one source of what an operation
 * accepts and answers (they validate, serialise and document); this module adds what a reader needs on top:
 *
 * - Error responses per operation (`documentErrors`, run as each API route is declared): the codes every API
 *   operation can answer — 400 `invalid_request`; 401, 403 and 429 from the key guard; 404 for an operation on an
 *   object — plus the ones its route declares in `schema.errors`, each with an example body. So an operation lists
 *   what it can really return, and its response schemas also serialise those answers.
 * - `referenceDocument`: paths relative to the server URL (which ends in /v1), examples (./examples.ts) on component
 *   schemas, request bodies and parameters, a curl sample per operation, the webhooks Kasse sends (OpenAPI 3.1
 *   `webhooks`), tag descriptions and the introduction (docs/api.md, the API's conventions).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifySchema } from 'fastify';
import type { Mode } from '../chains/types.ts';
import { KASSE_HOME } from '../config.ts';
import { ERROR_STATUS, type ErrorCode } from '../core/errors.ts';
import { freeFormKeys } from '../core/json-schema.ts';
import { ID_PATTERNS } from '../core/ids.ts';
import { EVENT_TYPES } from '../modules/payments/index.ts';
import {
  ERROR_EXAMPLES,
  ID_EXAMPLES,
  PARAMETER_EXAMPLES,
  PATH_EXAMPLES,
  REQUEST_EXAMPLES,
  SCHEMA_EXAMPLES,
} from './examples.ts';

declare module 'fastify' {
  interface FastifySchema {
    /**
     * Error codes the operation can answer beyond those every API operation can (`invalid_request`, `unauthorized`,
     * `wrong_mode`, `rate_limited`, and `not_found` when the path names an object by id). Documented per operation.
     */
    errors?: readonly ErrorCode[];
  }
}

/** Codes the key guard can answer on every operation that needs a key. */
const GUARD_CODES: ErrorCode[] = ['unauthorized', 'wrong_mode', 'rate_limited'];

const STATUS_TEXT: Record<number, string> = {
  400: 'Invalid request',
  401: 'Unauthorized',
  403: 'Wrong mode',
  404: 'Not found',
  409: 'Conflict',
  422: 'Not possible now',
  429: 'Rate limited',
  500: 'Internal error',
  503: 'Unavailable',
};

/** The error codes an API operation can answer. */
export function operationErrors(route: { url: string; schema?: FastifySchema; config?: unknown }): ErrorCode[] {
  const codes = new Set<ErrorCode>(['invalid_request']);
  if (!(route.config as { public?: boolean } | undefined)?.public) for (const c of GUARD_CODES) codes.add(c);
  if (/\/:\w*id\b/i.test(route.url)) codes.add('not_found');
  for (const c of route.schema?.errors ?? []) codes.add(c);
  return [...codes].sort((a, b) => ERROR_STATUS[a] - ERROR_STATUS[b]);
}

/** Adds the operation's error responses to a documented route's schema (an `onRoute` hook of the API). */
export function documentErrors(route: { url: string; schema?: FastifySchema; config?: unknown }): void {
  const schema = route.schema as (FastifySchema & { response?: Record<string, unknown> }) | undefined;
  if (!schema || schema.hide) return;
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of operationErrors(route)) {
    const status = ERROR_STATUS[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const responses: Record<string, unknown> = {};
  const required = (schema.body as { required?: string[] } | undefined)?.required?.[0];
  for (const [status, codes] of byStatus) responses[status] = errorResponse(status, codes, required);
  schema.response = { ...responses, ...schema.response };
}

/** The 400 example names a required field of the body, else an unknown query parameter. */
function invalidRequestExample(requiredField: string | undefined) {
  return requiredField
    ? { message: `${requiredField} is required`, param: requiredField }
    : { message: 'expand is not a known property', param: 'expand' };
}

function errorResponse(status: number, codes: ErrorCode[], requiredField: string | undefined) {
  const example = (c: ErrorCode) => ({
    code: c,
    ...(c === 'invalid_request'
      ? invalidRequestExample(requiredField)
      : { message: ERROR_EXAMPLES[c].message, param: ERROR_EXAMPLES[c].param }),
  });
  const explained = codes.map((c) => `\`${c}\`: ${ERROR_EXAMPLES[c].summary}`);
  return {
    description: `${STATUS_TEXT[status] ?? 'Error'} — ${explained.join('; ')}.`,
    ...(status === 429
      ? { headers: { 'Retry-After': { type: 'integer', description: 'Seconds until a request may pass again.' } } }
      : {}),
    content: {
      'application/json': {
        schema: { $ref: 'Error#' },
        examples: Object.fromEntries(
          codes.map((c) => [c, { summary: ERROR_EXAMPLES[c].summary, value: { error: example(c) } }]),
        ),
      },
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// The served document

// biome-ignore lint/suspicious/noExplicitAny: the generated OpenAPI document, walked loosely node by node (its shape is @fastify/swagger's)
type Json = Record<string, any>;

/** Sections of the reference, in the order the sidebar shows them (tags not listed follow). */
const TAGS: Array<{ name: string; description: string }> = [
  {
    name: 'Payments',
    description:
      'A payment is priced in US cents. The payer picks a network and coin on the hosted checkout (`checkout_url`), or you pick it with `token` when creating the payment or with a coin choice (an attempt); each attempt has its own deposit address and exact amount, held for 10 minutes. Kasse watches the chain and sends a webhook on every change. `GET /payments/{id}` is the truth.',
  },
  {
    name: 'Payment links',
    description:
      'Reusable public pages that create ordinary payments: `fixed`, `open`, `tip` and `pos` (a staff terminal).',
  },
  {
    name: 'Currencies',
    description: 'The networks and coins payers can use now, with their rates, and what a price costs in a coin.',
  },
  { name: 'Balance', description: 'What Kasse owes you: credited payments less fees and reversals.' },
  {
    name: 'Events',
    description:
      'Every change is recorded as an event and sent to your webhook URL (see Webhooks below). These operations list events, show each delivery attempt and send an event again.',
  },
  {
    name: 'Statements',
    description:
      'A month of the balance from the ledger: credits, conversions, held money, reversals, payouts, by coin, reconciled.',
  },
  {
    name: 'Tax invoices',
    description:
      'Indian GST tax invoices for paid payments, consecutive per financial year, as JSON and PDF. The seller is the account’s tax profile (`PATCH /account`).',
  },
  {
    name: 'Subscriptions',
    description:
      'A customer billed the same amount every period: each period is an ordinary payment, emailed to the customer, with grace, past due and cancellation.',
  },
  {
    name: 'Disbursements',
    description:
      'Mass payouts of up to 500 items in the payout coin, released after a quorum of owners approves the batch on the dashboard.',
  },
  { name: 'Account', description: 'The merchant account behind the API key, and its tax profile.' },
  {
    name: 'x402',
    description:
      "Kasse as an x402 facilitator: resource servers verify and settle agents' per-request USDC payments with the merchant's API key, and each settlement becomes a paid Payment (docs/x402.md).",
  },
  {
    name: 'Webhooks',
    description:
      'Kasse POSTs an Event to your webhook URL on every change of a payment. Verify the `Service-Signature` header on the raw body before trusting it (the SDK’s `Kasse.webhooks.constructEvent` does), deduplicate on the event id, acknowledge with a 2xx within 10 seconds, and treat `GET /payments/{id}` as the truth. In test mode, `kasse listen` forwards these to your machine and `kasse trigger` fires them.',
  },
  {
    name: 'Test mode',
    description:
      'Operations of the test API only (404 on the live API): finish a test payment with a chosen outcome, and follow your test events as they happen — what `kasse listen` and `kasse trigger` use.',
  },
];

const EVENT_MEANINGS: Record<(typeof EVENT_TYPES)[number], string> = {
  'payment.detected': 'Money was seen on the network and is not confirmed yet.',
  'payment.confirming': 'Confirmations are counting.',
  'payment.paid':
    'Confirmed and enough: fulfil the order. Sent again if a payment is paid again after `payment.reorged`.',
  'payment.underpaid':
    'Confirmed but short. The payer can send the rest within the coin’s 10 minutes, or you can accept it (`POST /payments/{id}/accept`).',
  'payment.overpaid': 'More than asked arrived; sent in addition to `payment.paid` (the attempt’s `overpaid` is true).',
  'payment.expired': 'Nothing arrived within the payment’s 24 hours.',
  'payment.late':
    'Money arrived after the coin’s 10 minutes ended. Accepted automatically within 24 hours when the coin’s price moved 3 % or less; otherwise accept or refund it.',
  'payment.wrong_asset':
    'A different coin arrived, worth at least that coin’s minimum (the attempt’s `wrong_asset` is true). Refund it or ask the payer to pay again.',
  'payment.reorged':
    'The transaction of a paid payment left the chain: pause fulfilment until `payment.paid` comes again.',
  'payment.refunded': 'A refund was sent.',
  'payment.cancelled':
    'You cancelled the payment before any money was seen; for a manual payment, its hold was voided (by you, or at `authorization.capture_before`) or reclaimed by the payer before anything was captured.',
  'payment.authorized':
    'Manual payments only (`capture_method: manual`): the payer’s authorization is locked in escrow with its confirmations. Capture (`POST /payments/{id}/capture`) or void it before `authorization.capture_before`.',
  'payment.captured':
    'Manual payments only: a capture settled on chain; the newest entry of `authorization.captures` is this one (its `amount_usd_cents`). The first capture also sends `payment.paid`.',
};

const SIGNATURE_HEADERS = [
  {
    name: 'Service-Signature',
    in: 'header',
    required: true,
    description:
      '`t=<unix seconds>,v1=<hex HMAC-SHA256>`: the MAC is over `<t>.<raw body>`, keyed with your whole webhook secret (`whsec_…`) as UTF-8. Reject the request when the header is missing, `t` is more than 300 seconds from your clock, `v1` is not 64 hex characters or no `v1` matches (compare in constant time). The SDK’s `Kasse.webhooks.constructEvent` does all of this.',
    schema: { type: 'string' },
    example: 't=1772366652,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd',
  },
  {
    name: 'Service-Event-Id',
    in: 'header',
    required: true,
    description: 'The event id (`evt_…`): deduplicate on it, deliveries are at least once.',
    schema: { type: 'string' },
  },
  {
    name: 'Service-Event-Type',
    in: 'header',
    required: true,
    description: 'The event type.',
    schema: { type: 'string' },
  },
];

function webhooks(): Json {
  const out: Json = {};
  for (const type of EVENT_TYPES) {
    out[type] = {
      post: {
        summary: type,
        tags: ['Webhooks'],
        security: [],
        description: `${EVENT_MEANINGS[type]}\n\nKasse POSTs the Event to the payment’s \`webhook_url\`, else the account’s default URL for the mode. Events of one payment arrive in order; the webhook is a notification and \`GET /payments/{id}\` is the truth.`,
        parameters: SIGNATURE_HEADERS,
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: { $ref: '#/components/schemas/PaymentEvent' },
              example: { ...(SCHEMA_EXAMPLES.PaymentEvent as Json), type },
            },
          },
        },
        responses: {
          '2XX': {
            description:
              'Acknowledge with any 2xx within 10 seconds. Anything else is retried after 1 min, 5 min, 30 min, 2 h, 6 h and 12 h.',
          },
        },
      },
    };
  }
  return out;
}

const PAYMENT_EVENT = {
  type: 'object',
  description: 'The body of a `payment.*` webhook: the event and the full Payment as it was at that moment.',
  required: ['id', 'type', 'created_at', 'data'],
  additionalProperties: false,
  properties: {
    id: { type: 'string', pattern: ID_PATTERNS.evt, description: 'Event id; the key to deduplicate deliveries on.' },
    type: { type: 'string', enum: [...EVENT_TYPES] },
    created_at: { type: 'string', format: 'date-time', description: 'When the change happened.' },
    data: { $ref: '#/components/schemas/Payment' },
  },
};

/** docs/api.md without its title, relative links turned into their text: the reference's introduction. */
function conventions(): string {
  const text = readFileSync(join(KASSE_HOME, 'docs', 'api.md'), 'utf8');
  return text.replace(/^# .*\n+/, '').replace(/\[([^\]]+)\]\((?!https?:)[^)]*\)/g, '$1');
}

let introduction: string | undefined;

function intro(mode: Mode, serverUrl: string): string {
  const other = mode === 'test' ? 'live' : 'test';
  return [
    `The Kasse ${mode} API at \`${serverUrl}\`. Authenticate every request with \`Authorization: Bearer kasse_${mode}_…\` (a \`kasse_${other}_\` key is refused with 403 \`wrong_mode\`). Every answer that is not 2xx carries the Error body.`,
    mode === 'test'
      ? 'In test mode no real money moves: the simulator finishes a payment with a chosen outcome, `kasse trigger` fires any payment event from your terminal and `kasse listen` forwards your test webhooks to your machine.'
      : 'Try everything against the test API first: the same paths, with a simulator.',
    'From TypeScript, use the SDK `@kasse/sdk` (the `sdk/` folder of Kasse): a typed method per operation, retries, pagination and webhook verification. This page is rendered from the [OpenAPI document](openapi.json).',
  ].join('\n\n');
}

/** A shell-quoted curl call of the operation with its examples. */
function curlSample(method: string, path: string, op: Json, serverUrl: string): string {
  const params = (op.parameters ?? []) as Json[];
  let url =
    serverUrl +
    path.replace(/\{(\w+)\}/g, (_m, name: string) =>
      String(params.find((p) => p.in === 'path' && p.name === name)?.example ?? `<${name}>`),
    );
  const query = params.filter((p) => p.in === 'query' && p.required && p.example !== undefined);
  if (query.length > 0) url += `?${query.map((p) => `${p.name}=${encodeURIComponent(String(p.example))}`).join('&')}`;
  const lines = [
    `curl ${method === 'get' ? '' : `-X ${method.toUpperCase()} `}"${url}"`,
    `  -H "Authorization: Bearer $KASSE_API_KEY"`,
  ];
  if (params.some((p) => p.in === 'header' && p.name === 'Idempotency-Key'))
    lines.push(`  -H "Idempotency-Key: order-1001"`);
  const body = op.requestBody?.content?.['application/json']?.schema?.examples?.[0];
  if (body !== undefined && Object.keys(body).length > 0) {
    lines.push(`  -H "Content-Type: application/json"`, `  -d '${JSON.stringify(body).replace(/'/g, "'\\''")}'`);
  }
  return lines.join(' \\\n');
}

/** Capitalised the way the API documents them (`Idempotency-Key`); Fastify keeps header schemas in lower case. */
const headerName = (name: string) =>
  name === 'last-event-id'
    ? 'Last-Event-ID'
    : name.replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase());

function decorateOperation(method: string, path: string, op: Json, serverUrl: string): void {
  for (const p of (op.parameters ?? []) as Json[]) {
    if (p.in === 'header') p.name = headerName(p.name);
    if (p.in === 'query' && p.example === undefined && PARAMETER_EXAMPLES[p.name] !== undefined)
      p.example = PARAMETER_EXAMPLES[p.name];
    if (p.in === 'path' && p.example === undefined) {
      const prefix = /^\^(\w+)_/.exec(p.schema?.pattern ?? '')?.[1];
      p.example = (prefix && ID_EXAMPLES[prefix]) || PATH_EXAMPLES[p.name];
    }
  }
  const body = op.requestBody?.content?.['application/json']?.schema;
  if (body && body.examples === undefined && op.operationId && REQUEST_EXAMPLES[op.operationId] !== undefined)
    body.examples = [REQUEST_EXAMPLES[op.operationId]];
  op['x-codeSamples'] = [{ lang: 'Shell', label: 'curl', source: curlSample(method, path, op, serverUrl) }];
}

/**
 * The OpenAPI document served at `{base_url}/openapi.json` and rendered at `{base_url}/docs`, from the one
 * @fastify/swagger builds out of the route schemas.
 */
export function referenceDocument(generated: Json, mode: Mode, serverUrl: string): Json {
  const doc = structuredClone(generated);
  const paths: Json = {};
  for (const [p, ops] of Object.entries<Json>(doc.paths ?? {})) {
    const path = p.replace(/^\/v1(?=\/)/, '');
    for (const [method, op] of Object.entries<Json>(ops)) decorateOperation(method, path, op, serverUrl);
    paths[path] = ops;
  }
  const schemas: Json = { ...(doc.components?.schemas ?? {}), PaymentEvent: PAYMENT_EVENT };
  const hooks = webhooks();
  for (const [name, schema] of Object.entries<Json>(schemas)) {
    if (schema.examples === undefined && SCHEMA_EXAMPLES[name] !== undefined)
      schemas[name] = { ...schema, examples: [SCHEMA_EXAMPLES[name]] };
  }
  const used = new Set(
    [...Object.values<Json>(paths), ...Object.values<Json>(hooks)].flatMap((ops) =>
      Object.values<Json>(ops).flatMap((op) => (op.tags ?? []) as string[]),
    ),
  );
  introduction ??= conventions();
  // Free-form keys (metadata) as `additionalProperties`, as the validator and the serialiser read them.
  return freeFormKeys({
    ...doc,
    info: { ...doc.info, description: `${intro(mode, serverUrl)}\n\n${introduction}` },
    servers: [{ url: serverUrl }],
    tags: [
      ...TAGS.filter((t) => used.has(t.name)),
      ...[...used].filter((n) => !TAGS.some((t) => t.name === n)).map((name) => ({ name })),
    ],
    paths,
    webhooks: hooks,
    components: { ...doc.components, schemas },
  });
}
