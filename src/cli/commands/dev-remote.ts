/** How developer commands reach a Kasse: the test API's URL and a test key, from flags or the environment. */
import { Kasse } from '../../../sdk/src/index.ts';
import { UsageError } from '../../core/flags.ts';

/** The test API of a Kasse started with `npm start` on this machine. */
export const DEFAULT_API_URL = 'http://127.0.0.1:8081/v1';

export const REMOTE_FLAGS = { 'api-url': { type: 'string' }, 'api-key': { type: 'string' } } as const;

/** The SDK client for `--api-url`/`KASSE_API_URL` and `--api-key`/`KASSE_API_KEY`; test keys only. */
export function remote(flags: Record<string, unknown>): { kasse: Kasse; key: string; baseUrl: string } {
  const key = (flags['api-key'] as string | undefined) ?? process.env.KASSE_API_KEY;
  const baseUrl = (flags['api-url'] as string | undefined) ?? process.env.KASSE_API_URL ?? DEFAULT_API_URL;
  if (!key) throw new UsageError('give a test API key: --api-key kasse_test_… or KASSE_API_KEY');
  if (!key.startsWith('kasse_test_'))
    throw new UsageError('listen and trigger work in test mode: use a test key (kasse_test_…) and the test API URL');
  if (!/^https?:\/\//.test(baseUrl))
    throw new UsageError(`--api-url must be the test API's URL, e.g. ${DEFAULT_API_URL}`);
  return { kasse: new Kasse(key, { baseUrl, maxRetries: 3 }), key, baseUrl };
}
