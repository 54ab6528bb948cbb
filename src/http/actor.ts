/** The audit log's actor for an API request: the key that authenticated it and the client address. */
import type { FastifyRequest } from 'fastify';
import type { Actor } from '../modules/audit/service.ts';

export function keyActor(req: FastifyRequest): Actor {
  return { type: 'key', id: req.auth.keyId, label: `${req.auth.mode} API key`, ip: req.ip };
}
