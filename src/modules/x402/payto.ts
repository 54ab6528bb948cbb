/**
 * Each merchant's x402 receiving address per network (`x402_pay_to`), allotted once from the deposit addresses'
 * derivation sequence and kept, so every x402 payment of the merchant on a network pays one address that sweeps
 * collect like a deposit address.
 *
 * An address is derived under the network's configuration of the time: on the test-mode simulator it is a keyless
 * stand-in, with a node and a forwarder factory it is the factory's CREATE2 clone. So the row keeps under which
 * configuration it was derived (`X402Scheme.derivation`); when the network's configuration is another one now (a
 * node configured after agents used the simulator, another factory), the address is derived again from its index
 * under the current configuration and the old one is retired (`x402_pay_to_retired`): it is never offered again, and
 * a payment to it is refused as paying someone else. Only an address the current configuration can sweep is given
 * out; under the simulator (which sweeps nothing and moves no money) addresses stay as they are. A process checks
 * each address once (the configuration is read when it starts) and then answers from memory.
 */
import type { Tenant } from '../../core/tenant.ts';
import type { X402Kind, X402Scheme } from '../../chains/x402.ts';
import type { Clock } from '../../core/clock.ts';
import type { Logger } from '../../core/log.ts';
import type { Db } from '../../db/index.ts';
import { payToOf, replacePayTo, savePayTo } from './store.ts';

/** The derivation of networks the test-mode simulator serves (`X402Scheme.derivation`). */
export const SIMULATOR = 'simulator';

export interface PayTo {
  address: string;
  index: bigint;
}

export class PayToBook {
  /** Addresses checked against the current configuration in this process, by merchant, mode and network. */
  private readonly known = new Map<string, PayTo>();
  /** Checks under way, so concurrent requests of one merchant share one. */
  private readonly pending = new Map<string, Promise<PayTo>>();

  constructor(
    private readonly deps: {
      db: Db;
      clock: Clock;
      log: Logger;
      /** A fresh derivation index (the deposit addresses' sequence). */
      nextIndex: () => Promise<bigint>;
    },
  ) {}

  /** The merchant's address on the kind's network as the current configuration derives it, allotted on first use. */
  get(tenant: Tenant, kind: X402Kind, scheme: X402Scheme): Promise<PayTo> {
    const { mode, merchantId } = tenant;
    const key = `${merchantId}|${mode}|${kind.chain}`;
    const known = this.known.get(key);
    if (known) return Promise.resolve(known);
    let p = this.pending.get(key);
    if (!p) {
      p = this.check(tenant, kind, scheme).finally(() => this.pending.delete(key));
      this.pending.set(key, p);
    }
    return p.then((payTo) => {
      this.known.set(key, payTo);
      return payTo;
    });
  }

  private async check(tenant: Tenant, kind: X402Kind, scheme: X402Scheme): Promise<PayTo> {
    const { mode, merchantId } = tenant;
    const { db, clock } = this.deps;
    const derivation = scheme.derivation(mode, kind.chain);
    const row = await payToOf(db, tenant, kind.chain);
    if (!row) {
      const index = await this.deps.nextIndex();
      const address = await scheme.payTo(mode, kind.chain, index);
      await savePayTo(db, { merchantId, mode, chain: kind.chain, index, address, derivation, now: clock.now() });
      // Two processes racing keep the first row.
      const kept = (await payToOf(db, tenant, kind.chain))!;
      return { address: kept.address, index: kept.index };
    }
    // The simulator takes a payment at any address and moves no money: an address stays as it is under it.
    if (row.derivation === derivation || derivation === SIMULATOR) return { address: row.address, index: row.index };
    // Derived under another configuration of the network (or before Kasse recorded which): derive it again.
    const address = await scheme.payTo(mode, kind.chain, row.index);
    const retired = address.toLowerCase() === row.address.toLowerCase() ? null : row;
    await replacePayTo(db, { merchantId, mode, chain: kind.chain, was: row, address, derivation, now: clock.now() });
    if (retired)
      this.deps.log.warn(
        { merchantId, mode, chain: kind.chain, retired: retired.address, address, derivation },
        'x402 address derived under an earlier configuration of its network retired; a sweepable one replaces it',
      );
    const now = (await payToOf(db, tenant, kind.chain))!;
    return { address: now.address, index: now.index };
  }
}
