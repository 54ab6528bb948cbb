/** Page modules served on the checkout listener. */
import type { FastifyInstance } from 'fastify';
import type { Kasse } from '../kasse.ts';

export type CheckoutRoute = (app: FastifyInstance, deps: { kasse: Kasse }) => Promise<void>;

export const checkoutRoutes: CheckoutRoute[] = [];
