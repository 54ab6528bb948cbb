/** Every API route module, registered under /v1 on both API listeners. */
import type { ApiApp, ApiDeps } from '../api.ts';
import account from './account.ts';
import events from './events.ts';

export type ApiRoute = (app: ApiApp, deps: ApiDeps) => Promise<void>;

export const apiRoutes: ApiRoute[] = [account, events];
