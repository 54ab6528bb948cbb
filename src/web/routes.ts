/** Page modules served on the checkout listener. */
import type { FastifyInstance } from 'fastify';
import { solanaCheckoutRoutes } from '../chains/solana/checkout.ts';
import type { Kasse } from '../kasse.ts';
import { assetRoutes } from './assets.ts';
import checkout from './checkout.ts';
import gasless from './gasless.ts';
import links from './links.ts';

export type CheckoutRoute = (app: FastifyInstance, deps: { kasse: Kasse }) => Promise<void>;

export const checkoutRoutes: CheckoutRoute[] = [gasless, assetRoutes, checkout, links, solanaCheckoutRoutes];
