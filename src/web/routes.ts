/** Page modules served on the checkout listener. */
import type { FastifyInstance } from 'fastify';
import type { Kasse } from '../kasse.ts';
import { assetRoutes } from './assets.ts';
import { brandRoutes } from './brand.ts';
import checkout from './checkout.ts';
import extensions from './extensions.ts';
import links from './links.ts';
import dashboard from './dashboard/index.ts';
import subscriptions from './subscriptions.ts';

export type CheckoutRoute = (app: FastifyInstance, deps: { kasse: Kasse }) => Promise<void>;

export const checkoutRoutes: CheckoutRoute[] = [
  extensions,
  assetRoutes,
  brandRoutes,
  checkout,
  links,
  dashboard,
  subscriptions,
];
