/**
 * The SDK's methods, one line per API operation: `resource.method: op('<operation id>')`. Everything else — the
 * HTTP method and path, path parameters (positional, in path order), whether the next argument is a body or query
 * parameters, the Idempotency-Key, paging, streaming, and every type — comes from the generated files
 * (./generated/), so adding an operation the server gained is `npm run sdk:generate` and one line here. The SDK's
 * test fails while an operation of the API has no line.
 */
import type { OPERATIONS } from './generated/operations.ts';
import type { PagePromise } from './pagination.ts';
import type { RequestOptions } from './client.ts';
import type { EventStream, StreamOptions } from './stream.ts';
import type { OperationId, QueryParams, RequestBody, ResponseBody } from './types.ts';

export interface Endpoint<Id extends OperationId> {
  readonly operationId: Id;
}

const op = <Id extends OperationId>(operationId: Id): Endpoint<Id> => ({ operationId });

export const RESOURCES = {
  account: { retrieve: op('getAccount'), update: op('updateAccount') },
  balance: { retrieve: op('getBalance') },
  currencies: { list: op('listCurrencies'), estimate: op('getEstimate') },
  payments: {
    create: op('createPayment'),
    list: op('listPayments'),
    retrieve: op('getPayment'),
    createAttempt: op('createPaymentAttempt'),
    cancel: op('cancelPayment'),
    accept: op('acceptPayment'),
    capture: op('capturePayment'),
    void: op('voidPayment'),
    refund: op('refundPayment'),
  },
  links: { create: op('createLink'), list: op('listLinks'), retrieve: op('getLink'), update: op('updateLink') },
  events: {
    list: op('listEvents'),
    retrieve: op('getEvent'),
    redeliver: op('redeliverEvent'),
    stream: op('streamEvents'),
  },
  statements: { retrieve: op('getStatement') },
  taxInvoices: {
    create: op('createTaxInvoice'),
    list: op('listTaxInvoices'),
    retrieve: op('getTaxInvoice'),
    pdf: op('getTaxInvoicePdf'),
  },
  subscriptions: {
    create: op('createSubscription'),
    list: op('listSubscriptions'),
    retrieve: op('getSubscription'),
    cancel: op('cancelSubscription'),
  },
  disbursements: {
    create: op('createDisbursement'),
    list: op('listDisbursements'),
    retrieve: op('getDisbursement'),
    cancel: op('cancelDisbursement'),
  },
  x402: {
    supported: op('x402Supported'),
    payTo: op('x402PayTo'),
    verify: op('x402Verify'),
    settle: op('x402Settle'),
    discoveryResources: op('x402DiscoveryResources'),
  },
  testHelpers: { payments: { simulate: op('simulatePayment') }, subscriptions: { advance: op('advanceSubscription') } },
} as const;

// ----------------------------------------------------------------------------------------------------------------
// The method type of each line, from the operation's generated metadata and types.

type Meta<Id extends OperationId> = (typeof OPERATIONS)[Id];

/** One string argument per `{param}` of the path, in order. */
type PathArgs<P extends string> = P extends `${string}{${string}}${infer Rest}` ? [string, ...PathArgs<Rest>] : [];

// biome-ignore lint/complexity/noBannedTypes: `{} extends T` holds exactly when T has no required field
type Optional<T> = {} extends T ? true : false;

/** The body (or, for reads, the query parameters); optional when every field of it is. */
type InputArgs<Id extends OperationId> = Meta<Id>['body'] extends true
  ? Optional<RequestBody<Id>> extends true
    ? [body?: RequestBody<Id>]
    : [body: RequestBody<Id>]
  : Meta<Id>['query'] extends true
    ? Optional<QueryParams<Id>> extends true
      ? [query?: QueryParams<Id>]
      : [query: QueryParams<Id>]
    : [];

type Item<Id extends OperationId> = ResponseBody<Id> extends { data: Array<infer I> } ? I : never;

type Returns<Id extends OperationId> = Meta<Id>['stream'] extends true
  ? EventStream
  : Meta<Id>['binary'] extends true
    ? Promise<Uint8Array>
    : Meta<Id>['list'] extends 'cursor' | 'all'
      ? PagePromise<ResponseBody<Id> & { data: Array<Item<Id>> }, Item<Id>>
      : Promise<ResponseBody<Id>>;

type Options<Id extends OperationId> = Meta<Id>['stream'] extends true
  ? StreamOptions & RequestOptions
  : RequestOptions;

export type Method<Id extends OperationId> = (
  ...args: [...PathArgs<Meta<Id>['path']>, ...InputArgs<Id>, options?: Options<Id>]
) => Returns<Id>;

type MethodsOf<T> = { readonly [K in keyof T]: T[K] extends Endpoint<infer Id> ? Method<Id> : MethodsOf<T[K]> };

export type Resources = MethodsOf<typeof RESOURCES>;
