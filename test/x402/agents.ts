/**
 * x402 on both sides with the official packages, unchanged: a merchant's Express API protected by `paymentMiddleware`
 * (`@x402/express`, `x402ResourceServer`, `ExactEvmScheme` of `@x402/evm/exact/server`) that uses Kasse as its
 * facilitator through `HTTPFacilitatorClient` (the API key as Bearer via `createAuthHeaders`), and an agent paying
 * with `wrapFetchWithPayment` (`@x402/fetch`) and a viem account.
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { HTTPFacilitatorClient } from '@x402/core/server';
import { x402Client } from '@x402/core/client';
import type { Price } from '@x402/core/types';
import { ExactEvmScheme as ExactEvmClient } from '@x402/evm/exact/client';
import { ExactEvmScheme } from '@x402/evm/exact/server';
import { paymentMiddleware, x402ResourceServer } from '@x402/express';
import { wrapFetchWithPayment } from '@x402/fetch';
import express from 'express';
import type { LocalAccount } from 'viem';
import { Kasse } from '../../sdk/src/index.ts';

export interface Shop {
  url: string;
  close(): Promise<void>;
}

/** An Express API whose `GET /weather` costs `price` on `network`, paid to `payTo`, with Kasse as facilitator. */
export async function startShop(opts: {
  apiBase: string;
  key: string;
  network: `${string}:${string}`;
  payTo: string;
  price: Price;
}): Promise<Shop> {
  // The SDK's helper gives the facilitator config (docs/x402.md).
  const facilitator = new HTTPFacilitatorClient(new Kasse(opts.key, { baseUrl: opts.apiBase }).x402.facilitator());
  const server = new x402ResourceServer(facilitator).register(opts.network, new ExactEvmScheme());
  const app = express();
  app.use(
    paymentMiddleware(
      {
        'GET /weather': {
          accepts: { scheme: 'exact', price: opts.price, network: opts.network, payTo: opts.payTo },
          description: 'Weather in Kochi',
          mimeType: 'application/json',
        },
      },
      server,
    ),
  );
  app.get('/weather', (_req, res) => {
    res.json({ city: 'Kochi', sky: 'rain' });
  });
  const http: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => http.close(() => resolve())),
  };
}

/** How an agent spends: in tokens its client does not know too (`anyAsset`), up to `maxUsd` a payment ($1 unless told). */
export interface AgentOptions {
  anyAsset?: boolean;
  maxUsd?: string;
  /** The fetch its requests go through. */
  base?: typeof fetch;
}

/** An agent's fetch that pays x402 challenges with `account`. */
export function agentFetch(account: LocalAccount, o: AgentOptions = {}): typeof fetch {
  const client = new x402Client().register('eip155:*', new ExactEvmClient(account));
  client.setSpendControls({
    ...(o.anyAsset ? { allowedAssets: true as const } : {}),
    ...(o.maxUsd ? { maxAmountPerPayment: o.maxUsd } : {}),
  });
  return wrapFetchWithPayment(o.base ?? fetch, client) as typeof fetch;
}
