/** What an API request carries besides its body: the audit log's actor (the key and client address), the Idempotency-Key. */
import type { FastifyRequest } from 'fastify';
import type { Actor } from '../modules/audit/index.ts';

export function keyActor(req: FastifyRequest): Actor {
  return { type: 'key', id: req.auth.keyId, label: `${req.auth.mode} API key`, ip: req.ip };
}

/** The request's Idempotency-Key header, if sent (the service checks its form). */
export function idempotencyKey(req: FastifyRequest): string | undefined {
  return req.headers['idempotency-key'] as string | undefined;
}

/** The Idempotency-Key and the actor an idempotent create is asked with (the last arguments of the service's create). */
export function idempotent(req: FastifyRequest): [string | undefined, Actor] {
  return [idempotencyKey(req), keyActor(req)];
}
