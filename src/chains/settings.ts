/**
 * Reading a family's own settings object of a network in the networks file (`"evm": {…}`, `"solana": {…}`,
 * `"utxo": {…}`) the same way in every family: an object of known keys only (`$comment` allowed), optional integers
 * within bounds, optional block or slot numbers; each refusal names the setting (`at.key`). What a setting means, its
 * defaults and its other checks stay with the family (its config.ts).
 */
import { ConfigError } from '../config.ts';

export class SettingsObject {
  readonly values: Record<string, unknown>;

  /** Refuses anything but an object (`shape` says what it must be) and keys not in `known`. */
  constructor(
    raw: unknown,
    readonly at: string,
    known: readonly string[],
    shape = 'an object',
  ) {
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new ConfigError(`${at} must be ${shape}`);
    this.values = raw as Record<string, unknown>;
    const allowed = new Set([...known, '$comment']);
    for (const k of Object.keys(this.values))
      if (!allowed.has(k)) throw new ConfigError(`${at}.${k} is not a known setting`);
  }

  /** Whether `key` is given (not absent, not null). */
  has(key: string): boolean {
    return this.values[key] !== undefined && this.values[key] !== null;
  }

  /** An integer of at least `min` (and at most `max` when given); `fallback` when absent. */
  int<F extends number | null>(key: string, min: number, fallback: F, max?: number): number | F {
    if (!this.has(key)) return fallback;
    const v = this.values[key];
    if (!Number.isSafeInteger(v) || (v as number) < min || (max !== undefined && (v as number) > max))
      throw new ConfigError(
        max === undefined
          ? `${this.at}.${key} must be an integer ≥ ${min}`
          : `${this.at}.${key} must be an integer from ${min} to ${max}`,
      );
    return v as number;
  }

  /** A block (or slot) number where a watcher starts, `what` naming it in the refusal; null when absent. */
  start(key: string, what: string): bigint | null {
    if (!this.has(key)) return null;
    const v = this.values[key];
    if (!(Number.isSafeInteger(v) && (v as number) >= 0)) throw new ConfigError(`${this.at}.${key} must be ${what}`);
    return BigInt(v as number);
  }
}
