/**
 * The bytes of every asset the checkout host serves, fetched from it as a browser would: its own files, the chain
 * families' checkout scripts and checkout.js, each plain and gzip-encoded (the `pages` and `dashboard` benchmarks).
 */
import { get } from 'node:http';
import type { Kasse } from '../src/kasse.ts';
import { ASSET_NAMES } from '../src/web/assets.ts';
import { checkoutScripts } from '../src/web/extensions.ts';

/** The body's length in bytes as sent (no decoding) for a GET with `Accept-Encoding: encoding`. */
function servedBytes(url: string, encoding: 'identity' | 'gzip'): Promise<number> {
  return new Promise((resolve, reject) => {
    get(url, { headers: { 'accept-encoding': encoding } }, (res) => {
      const sent = res.headers['content-encoding'] ?? 'identity';
      if (res.statusCode !== 200 || sent !== encoding) {
        res.resume();
        reject(new Error(`${url}: ${res.statusCode}, ${sent} for ${encoding}`));
        return;
      }
      let n = 0;
      res.on('data', (chunk: Buffer) => (n += chunk.length));
      res.on('end', () => resolve(n));
      res.on('error', reject);
    }).on('error', reject);
  });
}

/** Bytes (plain and gzip) of each asset, by name, served by `kasse`'s checkout host. */
export async function servedAssetSizes(kasse: Kasse): Promise<Record<string, { bytes: number; gzip: number }>> {
  const base = kasse.urls.checkout;
  const urls: Array<[string, string]> = [
    ...[...ASSET_NAMES, ...checkoutScripts(kasse)].map((n): [string, string] => [n, `${base}/assets/${n}`]),
    ['checkout.js', `${base}/checkout.js`],
  ];
  const out: Record<string, { bytes: number; gzip: number }> = {};
  for (const [name, url] of urls)
    out[name] = { bytes: await servedBytes(url, 'identity'), gzip: await servedBytes(url, 'gzip') };
  return out;
}
