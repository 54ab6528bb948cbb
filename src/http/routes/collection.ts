/**
 * The routes a collection of the API has alike (payments, subscriptions, disbursements), named after its noun
 * (`createPayment`, "List payments"): the idempotent create (`POST /<nouns>`: 201 with what it created, 200 with what
 * an earlier request with the same Idempotency-Key and body created), the list (`GET /<nouns>`: a page, newest first,
 * filtered by its query), the read (`GET /<nouns>/:id`) and the changes of state the object's own rules decide
 * (`POST /<nouns>/:id/<action>`, else 422 `invalid_state`), each answering the object.
 */
import type { FastifySchema } from 'fastify';
import type { Static, TSchema } from 'typebox';
import type { Actor } from '../../modules/audit/index.ts';
import type { AuthenticatedKey } from '../../modules/merchants/index.ts';
import { idempotent, keyActor } from '../actor.ts';
import type { ApiApp } from '../api.ts';
import { PageOf } from '../schemas/common.ts';
import { IdempotentCreate } from '../schemas/payments.ts';

/** What the OpenAPI document says of an operation beyond its name: its description and the errors it adds. */
type Described = Pick<FastifySchema, 'description' | 'errors'>;

/** A collection's page of objects, as its service lists them. */
type Page = { data: unknown[]; next_cursor: string | null };

/** The service behind a collection's list and read (its list takes what the list's `query` schema admits). */
export interface CollectionService<Q> {
  list: (auth: AuthenticatedKey, query: Q) => Promise<Page>;
  get: (auth: AuthenticatedKey, id: string) => Promise<unknown>;
}

/** The service's methods that change one object by id as an actor: `cancel`, `accept`, … */
type Transitions<S> = {
  [M in keyof S]: S[M] extends (auth: AuthenticatedKey, id: string, actor: Actor) => Promise<unknown> ? M : never;
}[keyof S] &
  string;

export interface Collection<K extends string, Q extends TSchema> {
  /** `noun` names one object (`payment`); its answers are `ref`, its path's id `idParam`, its list's filters `query`. */
  noun: K;
  ref: TSchema;
  idParam: TSchema;
  query: Q;
  tags: string[];
}

export function collectionRoutes<K extends string, Q extends TSchema, S extends CollectionService<Static<Q>>>(
  app: ApiApp,
  c: Collection<K, Q>,
  service: S,
) {
  const Noun = c.noun[0]!.toUpperCase() + c.noun.slice(1);
  const path = `/${c.noun}s`;
  const named = (operationId: string, summary: string) => ({ operationId, summary, tags: c.tags });
  const id = (params: unknown) => (params as { id: string }).id;
  return {
    /** The service's create, asked with the request's Idempotency-Key and actor, answers `status` and the object. */
    create<B extends TSchema>(
      route: Described & { body: B; bodyLimit?: number },
      create: (
        request: { auth: AuthenticatedKey; body: Static<B> },
        idempotencyKey: string | undefined,
        actor: Actor,
      ) => Promise<{ status: number } & Record<K, unknown>>,
    ): void {
      const { bodyLimit, ...schema } = route;
      app.post(
        path,
        {
          ...(bodyLimit === undefined ? {} : { bodyLimit }),
          schema: { ...named(`create${Noun}`, `Create a ${c.noun}`), ...schema, ...IdempotentCreate(c.ref, c.noun) },
        },
        async (req, reply) => {
          const result = await create(req as { auth: AuthenticatedKey; body: Static<B> }, ...idempotent(req));
          return reply.code(result.status as 200 | 201).send(result[c.noun]);
        },
      );
    },

    /** The service's page of the key's objects, filtered by the collection's `query`. */
    list(description: string): void {
      const schema = { ...named(`list${Noun}s`, `List ${c.noun}s`), description, querystring: c.query };
      app.get(path, { schema: { ...schema, response: { 200: PageOf(c.ref) } } }, async (req) =>
        service.list(req.auth, req.query as Static<Q>),
      );
    },

    /** One object by its id. */
    get(description: string): void {
      const schema = { ...named(`get${Noun}`, `Get a ${c.noun}`), description, params: c.idParam };
      app.get(`${path}/:id`, { schema: { ...schema, response: { 200: c.ref } } }, async (req) =>
        service.get(req.auth, id(req.params)),
      );
    },

    /** The service's `action` on one object as the key's actor (`summary` by default "<Action> a <noun>"). */
    transition(action: Transitions<S>, route: { summary?: string; description: string }): void {
      const summary = route.summary ?? `${action[0]!.toUpperCase()}${action.slice(1)} a ${c.noun}`;
      const schema = {
        ...named(`${action}${Noun}`, summary),
        description: route.description,
        params: c.idParam,
        errors: ['invalid_state' as const],
        response: { 200: c.ref },
      };
      const run = service[action] as (auth: AuthenticatedKey, id: string, actor: Actor) => Promise<unknown>;
      app.post(`${path}/:id/${action}`, { schema }, async (req) =>
        run.call(service, req.auth, id(req.params), keyActor(req)),
      );
    },
  };
}
