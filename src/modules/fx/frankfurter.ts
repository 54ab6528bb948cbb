/**
 * FX reference rates for tax invoices: a client of the Frankfurter API's v1 wire format (the European Central
 * Bank's daily reference rates; no key), `GET {base}/{YYYY-MM-DD}?base=USD&symbols=INR` answered with
 * `{"amount":1.0,"base":"USD","date":"2026-03-13","rates":{"INR":86.9}}`. For a day without a fixing (weekend,
 * holiday, or today before publication) it answers the last published day, named in `date`.
 *
 * Rates of past days never change, so they are cached in memory; today's is fetched each time. Any failure (no
 * answer, an error status, a body that is not that shape) is `FxUnavailableError`, which the API answers with
 * 503 `fx_unavailable`. Rates are decimal strings rounded half up to 6 places, never floats.
 */
import type { Clock } from '../../core/clock.ts';
import { decimalFromNumber } from '../prices/index.ts';

export interface FxRate {
  /** Rupees per US dollar, at most 6 decimal places ("86.9"). */
  rate: string;
  /** The day the rate is the reference rate of (YYYY-MM-DD); may be before the day asked for. */
  date: string;
  source: string;
}

export class FxUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'FxUnavailableError';
  }
}

/** A source of USD→INR reference rates by day. */
export interface FxProvider {
  /** The reference rate for `date` (YYYY-MM-DD); rejects with FxUnavailableError. */
  usdInr(date: string): Promise<FxRate>;
}

/** Rounds a plain decimal string half up to `places` decimals, trailing zeros trimmed. */
export function roundDecimal(text: string, places: number): string {
  const [whole, frac = ''] = text.split('.') as [string, string?];
  if (frac.length <= places) return text;
  let units = BigInt(whole + frac.slice(0, places));
  if (Number(frac[places]) >= 5) units += 1n;
  const s = units.toString().padStart(places + 1, '0');
  const out = `${s.slice(0, -places)}.${s.slice(-places)}`.replace(/\.?0+$/, '');
  return out;
}

export class FrankfurterClient implements FxProvider {
  readonly source = 'frankfurter';
  private readonly cache = new Map<string, FxRate>();

  constructor(private readonly opts: { baseUrl: string; timeoutMs: number; clock: Clock }) {}

  async usdInr(date: string): Promise<FxRate> {
    const hit = this.cache.get(date);
    if (hit) return hit;
    const url = `${this.opts.baseUrl.replace(/\/+$/, '')}/${date}?base=USD&symbols=INR`;
    let status: number;
    let text: string;
    try {
      const res = await fetch(url, {
        headers: { accept: 'application/json', 'user-agent': 'kasse-fx' },
        signal: AbortSignal.timeout(this.opts.timeoutMs),
      });
      status = res.status;
      text = await res.text();
    } catch (err) {
      throw new FxUnavailableError(`FX provider did not answer (${err instanceof Error ? err.message : String(err)})`, {
        cause: err,
      });
    }
    if (status !== 200) throw new FxUnavailableError(`FX provider answered HTTP ${status}`);
    let body: { base?: unknown; date?: unknown; rates?: { INR?: unknown } };
    try {
      body = JSON.parse(text);
    } catch {
      throw new FxUnavailableError('FX provider answered something that is not JSON');
    }
    const inr = body?.rates?.INR;
    if (
      body?.base !== 'USD' ||
      typeof body.date !== 'string' ||
      !/^\d{4}-\d{2}-\d{2}$/.test(body.date) ||
      typeof inr !== 'number' ||
      !(inr > 0) ||
      !Number.isFinite(inr)
    ) {
      throw new FxUnavailableError('FX provider answered without a USD→INR rate');
    }
    if (body.date > date) throw new FxUnavailableError(`FX provider answered a rate of ${body.date} for ${date}`);
    const rate = roundDecimal(decimalFromNumber(inr), 6);
    if (!/^\d{1,5}(\.\d{1,6})?$/.test(rate) || !/[1-9]/.test(rate))
      throw new FxUnavailableError(`FX provider answered an implausible rate ${rate}`);
    const out = { rate, date: body.date, source: this.source };
    // A past day's fixing is final; today's may still be published or corrected.
    if (date < this.opts.clock.now().toISOString().slice(0, 10)) this.cache.set(date, out);
    return out;
  }
}
