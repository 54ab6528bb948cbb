/** Every API route module, registered under /v1 on both API listeners. */
import type { ApiApp, ApiDeps } from '../api.ts';
import account from './account.ts';
import balance from './balance.ts';
import currencies from './currencies.ts';
import disbursements from './disbursements.ts';
import events from './events.ts';
import eventStream from './event-stream.ts';
import invoices from './invoices.ts';
import links from './links.ts';
import payments from './payments.ts';
import simulate from './simulate.ts';
import statements from './statements.ts';
import subscriptions from './subscriptions.ts';
import x402 from './x402.ts';

export type ApiRoute = (app: ApiApp, deps: ApiDeps) => Promise<void>;

export const apiRoutes: ApiRoute[] = [account, events, payments, currencies, balance, simulate, links];
apiRoutes.push(statements, invoices, subscriptions);
apiRoutes.push(eventStream);
apiRoutes.push(disbursements);
apiRoutes.push(x402);
