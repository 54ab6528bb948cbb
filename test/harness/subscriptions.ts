/**
 * Subscriptions written straight into their table, many at once, as a test or a benchmark seeds them (the API
 * creates them one request at a time): active monthly subscriptions in test mode, all due at the same instant. And
 * a second Kasse process running the subscriptions' due work, for tests across processes and crashes.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import { newId } from '../../src/core/ids.ts';
import type { DbOrTx } from '../../src/db/index.ts';
import type { NewSubscription } from '../../src/modules/subscriptions/store/subscriptions.ts';
import { nodeArgs } from './commands.ts';

/** What differs between the seeded subscriptions. */
export interface SeedRow {
  customer_email: string;
  title: string;
  amount_usd_cents: number;
}

/** `n` rows of `merchantId`'s subscriptions, all started and due at `at`; `row(i)` gives the i-th one's own values. */
export function dueSubscriptions(
  merchantId: string,
  n: number,
  at: Date,
  row: (i: number) => SeedRow,
): NewSubscription[] {
  return Array.from({ length: n }, (_, i) => ({
    id: newId('sub'),
    merchant_id: merchantId,
    mode: 'test' as const,
    customer_name: null,
    interval: 'month' as const,
    interval_count: 1,
    grace_days: 3,
    status: 'active' as const,
    started_at: at,
    next_due_at: at,
    success_url: null,
    metadata: '{}',
    run_at: at,
    created_at: at,
    updated_at: at,
    ...row(i),
  }));
}

/** Inserts `rows`, a thousand per statement. */
export async function seedSubscriptions(db: DbOrTx, rows: readonly NewSubscription[]): Promise<void> {
  for (let k = 0; k < rows.length; k += 1000)
    await db
      .insertInto('subscriptions')
      .values(rows.slice(k, k + 1000))
      .execute();
}

/** A second Kasse process running one subscriptions pass (test/harness/subscription-worker.ts). */
export interface SubscriptionWorker {
  child: ChildProcessWithoutNullStreams;
  ready: Promise<void>;
  /** Starts the pass at `now`; resolves with its printed result (null when it died) and the signal that ended it. */
  go(now: Date): Promise<{ result: any; signal: NodeJS.Signals | null }>;
}

export function startSubscriptionWorker(opts: {
  databaseUrl: string;
  secrets: { secretKey: Buffer; masterSeed: string; hotWalletKey?: string | null };
  smtpUrl?: string;
  crash?: 'in-transaction' | 'after-commit' | 'after-send';
  /** Environment of the worker's Kasse (the parent's networks file and price providers, to work its chains). */
  env?: Record<string, string>;
}): SubscriptionWorker {
  const child = spawn(process.execPath, nodeArgs('test/harness/subscription-worker'), {
    env: {
      ...process.env,
      KASSE_WORKER_DATABASE_URL: opts.databaseUrl,
      KASSE_WORKER_SECRET_KEY: opts.secrets.secretKey.toString('hex'),
      KASSE_WORKER_MASTER_SEED: opts.secrets.masterSeed,
      ...(opts.smtpUrl ? { KASSE_WORKER_SMTP_URL: opts.smtpUrl } : {}),
      ...(opts.secrets.hotWalletKey ? { KASSE_WORKER_HOT_WALLET_KEY: opts.secrets.hotWalletKey } : {}),
      ...(opts.env ? { KASSE_WORKER_ENV: JSON.stringify(opts.env) } : {}),
      ...(opts.crash ? { KASSE_WORKER_CRASH: opts.crash } : {}),
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const lines = createInterface({ input: child.stdout });
  const printed: string[] = [];
  let onLine: (() => void) | null = null;
  lines.on('line', (l) => {
    printed.push(l);
    onLine?.();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  const ready = new Promise<void>((resolve, reject) => {
    onLine = () => printed.includes('ready') && resolve();
    void exited.then(({ code, signal }) =>
      reject(new Error(`worker exited before ready (${code ?? signal}):\n${stderr}`)),
    );
  });
  return {
    child,
    ready,
    async go(now) {
      child.stdin.write(`${now.toISOString()}\n`);
      const { code, signal } = await exited;
      const out = printed.filter((l) => l !== 'ready');
      if (code !== 0 && signal === null) throw new Error(`worker failed (${code}):\n${stderr}`);
      return { result: out.length > 0 ? JSON.parse(out[0]!) : null, signal };
    },
  };
}
