/**
 * Grants: a payer's one-time permission for Kasse to charge each period of a subscription (collection
 * `charge_automatically`), given on the customer's subscription page, revoked there or on chain, simulated in test
 * mode; and the merchant's switch of a subscription back to emailed invoices.
 *
 * The terms are Kasse's to set, not the page's: the merchant's receiving address on the network (allotted once per
 * merchant and network from the deposit addresses' sequence, swept like one), the subscription's amount in the
 * network's USDC (cents at the peg), a period of the shortest time between two due times (calendar.ts), the first
 * period to charge (the period due and unpaid now, else the next), an end `GRANT_PERIODS` periods later, and a total
 * of the amount times those periods. A signed grant whose terms differ in any of them is refused naming the field,
 * before anything is written; the family checks the signatures and simulates the relay (charges.ts of the chain).
 * Only then are the grant (`pending`) and its relay recorded, in one transaction holding the subscription's row;
 * the charging worker makes it `active` once the relay landed (charging.ts).
 */
import { randomBytes } from 'node:crypto';
import type { ChargeKind, ChargeScheme, GrantTerms, SigningRequest } from '../../chains/charges.ts';
import { invalid, invalidState, notFound } from '../../core/errors.ts';
import { newId } from '../../core/ids.ts';
import type { Mode } from '../../core/mode.ts';
import { tenantOf, type Tenant } from '../../core/tenant.ts';
import { isUniqueViolation, withTx, type Tx } from '../../db/index.ts';
import type { Actor } from '../audit/index.ts';
import { dueAt, shortestPeriodSeconds } from './calendar.ts';
import { windowEnd } from './charge-rules.ts';
import {
  currentGrants,
  insertCharges,
  insertGrant,
  pendingGrants,
  periodCharges,
  receiverOf,
  saveReceiver,
  setFunded,
  setGrantStatus,
  submittedCharges,
  type GrantRow,
} from './store/charges.ts';
import type { Charging, ChargingDeps } from './charging.ts';
import type { LinkCheck } from './customer-link.ts';
import { GRANT_PERIODS } from './model.ts';
import { auditTarget, type Presenter } from './presenter.ts';
import type { Subscription } from './schema.ts';
import {
  clockOf,
  findSubscription,
  invoicesOf,
  loadSubscription,
  setCollection,
  type SubscriptionRow,
} from './store/subscriptions.ts';

/** The terms as the page shows and sends them (amounts and times as decimal strings, the salt 0x-hex). */
export interface TermsBody {
  receiver: string;
  amount_per_period: string;
  period_seconds: number;
  start: number;
  end: number;
  total: string;
  salt: string;
}

/** The body of `POST /s/<token>/grant`: the network, the payer, the terms and the family's signatures. */
export interface GrantBody {
  network: string;
  payer: string;
  terms: TermsBody;
  signatures: Record<string, unknown>;
}

/** What the page needs to ask the wallet: the terms to show and what to sign. */
export interface GrantOffer {
  network: string;
  token: string;
  decimals: number;
  terms: TermsBody;
  sign: SigningRequest;
}

/** A network the page offers a grant on. */
export interface GrantChoice {
  network: string;
  name: string;
  token: string;
  symbol: string;
  family: string;
  enforcement: ChargeKind['enforcement'];
}

/** What the page shows before the payer connects a wallet: each network's terms (the payer and salt aside). */
export interface GrantPreview {
  choice: GrantChoice;
  terms: TermsBody;
  decimals: number;
  /** Unpaid periods before the terms' start: not charged, to be paid by hand. */
  unpaidBefore: number[];
}

export type SimulateGrantOutcome = 'grant' | 'revoke' | 'insufficient_funds';

/** No end: a grant's window computed before its end is known. */
const FAR = new Date(8.64e15);

export class Grants {
  constructor(
    private readonly p: Presenter,
    private readonly charging: Charging,
    private readonly c: ChargingDeps,
  ) {}

  private get deps() {
    return this.p.deps;
  }

  /** The networks of `mode` a payer may grant on now (each family's, with its network and token names). */
  choices(mode: Mode): GrantChoice[] {
    return this.kinds(mode).map(({ kind }) => {
      const network = this.c.chains.network(mode, kind.chain)!;
      return {
        network: kind.chain,
        name: network.name,
        token: kind.token.id,
        symbol: kind.token.symbol,
        family: network.family,
        enforcement: kind.enforcement,
      };
    });
  }

  private kinds(mode: Mode): Array<{ kind: ChargeKind; scheme: ChargeScheme }> {
    return this.c.schemes().flatMap((scheme) => scheme.kinds(mode).map((kind) => ({ kind, scheme })));
  }

  /** The subscription a customer link names, if grants can be given on it now; else why not (422). */
  private async grantable(check: LinkCheck): Promise<SubscriptionRow> {
    if (!check.ok) throw notFound('subscription');
    const sub = await findSubscription(this.deps.db, check.subscriptionId);
    if (!sub) throw notFound('subscription');
    if (sub.status === 'cancelled') throw invalidState('This subscription is cancelled.');
    if (sub.collection !== 'charge_automatically')
      throw invalidState('This subscription is paid by invoice; automatic charges are not offered.');
    return sub;
  }

  /** The network `name` names, among those a grant may be given on in `mode`; 400 `network` otherwise. */
  private kind(mode: Mode, name: unknown): { kind: ChargeKind; scheme: ChargeScheme } {
    const found = this.kinds(mode).find((k) => k.kind.chain === name);
    if (!found)
      throw invalid(
        `network must be one of: ${
          this.kinds(mode)
            .map((k) => k.kind.chain)
            .join(', ') || 'none'
        }.`,
        'network',
      );
    return found;
  }

  /** The merchant's receiving address for charges on `chain`, allotted on first use. */
  private async receiver(t: Tenant, kind: ChargeKind, scheme: ChargeScheme | null): Promise<string> {
    const known = await receiverOf(this.deps.db, t, kind.chain);
    if (known) return known.address;
    const index = await this.deps.payments.nextAddressIndex();
    const address = scheme
      ? await scheme.receiver(t.mode, kind.chain, index)
      : await this.c.chains.adapter(t.mode, kind.chain).deriveAddress(index);
    await saveReceiver(this.deps.db, t, kind.chain, address, index, this.deps.clock.now());
    return (await receiverOf(this.deps.db, t, kind.chain))!.address;
  }

  /**
   * The terms Kasse grants on for `sub` now (the salt aside), from the first period it charges (`firstPeriod`) for
   * `GRANT_PERIODS` periods.
   */
  private async terms(
    sub: SubscriptionRow,
    kind: ChargeKind,
    scheme: ChargeScheme | null,
    payer: string,
    salt: string,
  ): Promise<GrantTerms> {
    const decimals = kind.token.decimals;
    if (decimals < 2) throw new Error(`${kind.token.id} cannot carry cents (${decimals} decimals)`);
    const amount = BigInt(sub.amount_usd_cents) * 10n ** BigInt(decimals - 2);
    const { first } = await this.firstPeriod(sub);
    const startAt = dueAt(sub.started_at, sub.interval, sub.interval_count, first);
    const endAt = dueAt(sub.started_at, sub.interval, sub.interval_count, first + GRANT_PERIODS);
    return {
      mode: sub.mode,
      chain: kind.chain,
      token: kind.token,
      payer,
      receiver: await this.receiver(tenantOf(sub), kind, scheme),
      amountPerPeriod: amount,
      periodSeconds: shortestPeriodSeconds(sub.interval, sub.interval_count),
      start: Math.floor(startAt.getTime() / 1000),
      end: Math.floor(endAt.getTime() / 1000),
      total: amount * BigInt(GRANT_PERIODS),
      salt,
    };
  }

  /**
   * The first period a grant given now charges: the latest period invoiced and unpaid while it can still be charged
   * (its slot on chain open, its payment payable), else the next to come; and the unpaid periods before it, left to
   * be paid by hand — one charge now takes the current slot on chain, so an overdue earlier period cannot be charged
   * beside the latest (charge-rules.ts windowEnd).
   */
  private async firstPeriod(sub: SubscriptionRow): Promise<{ first: number; before: number[] }> {
    const open = [
      ...new Set(
        (await invoicesOf(this.deps.db, [sub.id])).filter((i) => i.check_at !== null && !i.paid).map((i) => i.period),
      ),
    ].sort((a, b) => a - b);
    const latest = open.at(-1);
    let first = sub.periods_invoiced + 1;
    if (latest !== undefined) {
      const startsAt = dueAt(sub.started_at, sub.interval, sub.interval_count, latest);
      const closes = windowEnd(
        { startedAt: sub.started_at, interval: sub.interval, intervalCount: sub.interval_count },
        { startsAt, periodSeconds: shortestPeriodSeconds(sub.interval, sub.interval_count), expiresAt: FAR },
        latest,
      );
      const now = clockOf(sub, this.deps.clock.now());
      if (now < closes && now < (await this.charging.periodOf(sub, latest)).payableUntil) first = latest;
    }
    return { first, before: open.filter((p) => p < first) };
  }

  /** Whether a grant of the subscription is active or on its way, and whether it is the simulator's. */
  async state(subscriptionId: string): Promise<{ active: boolean; pending: boolean; simulated: boolean }> {
    const g = (await currentGrants(this.deps.db, [subscriptionId])).get(subscriptionId);
    return {
      active: g?.status === 'active',
      pending: g?.status === 'pending',
      simulated: g?.enforcement === 'simulated',
    };
  }

  /** The terms a grant would have on each network now (empty when the subscription takes no grant now). */
  async preview(check: LinkCheck): Promise<GrantPreview[]> {
    if (!check.ok) return [];
    const sub = await findSubscription(this.deps.db, check.subscriptionId);
    if (!sub || sub.status === 'cancelled' || sub.collection !== 'charge_automatically') return [];
    const choices = this.choices(sub.mode);
    const { before } = await this.firstPeriod(sub);
    const out: GrantPreview[] = [];
    for (const { kind, scheme } of this.kinds(sub.mode)) {
      const terms = await this.terms(sub, kind, scheme, '', `0x${'0'.repeat(64)}`);
      out.push({
        choice: choices.find((c) => c.network === kind.chain)!,
        terms: termsBody(terms),
        decimals: kind.token.decimals,
        unpaidBefore: before,
      });
    }
    return out;
  }

  /** What the payer's wallet signs to grant `sub` on `network` (the page asks once the wallet is connected). */
  async offer(check: LinkCheck, network: string, payer: string): Promise<GrantOffer> {
    const sub = await this.grantable(check);
    const { kind, scheme } = this.kind(sub.mode, network);
    this.assertAddress(sub.mode, kind.chain, payer, 'payer');
    if ((await currentGrants(this.deps.db, [sub.id])).get(sub.id)?.status === 'active')
      throw invalidState('Automatic payment is already set up for this subscription.');
    const terms = await this.terms(sub, kind, scheme, payer, `0x${randomBytes(32).toString('hex')}`);
    return {
      network: kind.chain,
      token: kind.token.id,
      decimals: kind.token.decimals,
      terms: termsBody(terms),
      sign: await scheme.offer(terms),
    };
  }

  /**
   * A signed grant from the page: the terms compared with Kasse's field by field, the signatures checked and the
   * relay simulated by the family, then the grant and its relay recorded together and the relay sent. Refused with
   * the Error body, recording nothing, when any of it fails. `actor` is the customer on their link (customerActor).
   */
  async submit(check: LinkCheck, body: GrantBody, actor: Actor): Promise<Subscription> {
    const sub = await this.grantable(check);
    const { kind, scheme } = this.kind(sub.mode, body.network);
    this.assertAddress(sub.mode, kind.chain, body.payer, 'payer');
    if (!/^0x[0-9a-fA-F]{64}$/.test(body.terms.salt))
      throw invalid('terms.salt must be 32 bytes, 0x-hex.', 'terms.salt');
    const terms = await this.terms(sub, kind, scheme, body.payer, body.terms.salt);
    const want = termsBody(terms);
    for (const field of ['receiver', 'amount_per_period', 'period_seconds', 'start', 'end', 'total'] as const) {
      const given = body.terms[field];
      const same =
        field === 'receiver'
          ? String(given).toLowerCase() === want.receiver.toLowerCase()
          : String(given) === String(want[field]);
      if (!same) throw invalid(`terms.${field} must be ${want[field]} for this subscription.`, `terms.${field}`);
    }
    if ((await currentGrants(this.deps.db, [sub.id])).size > 0)
      throw invalidState('Automatic payment is already set up (or being set up) for this subscription.');
    const checked = await scheme.checkGrant(terms, body.signatures);
    const now = this.deps.clock.now();
    const id = newId('grt', now.getTime());
    try {
      await withTx(this.deps.db, async (tx) => {
        const row = (await loadSubscription(tx, tenantOf(sub), sub.id, true))!;
        if (row.status === 'cancelled') throw invalidState('This subscription is cancelled.');
        if ((await currentGrants(tx, [sub.id])).size > 0)
          throw invalidState('Automatic payment is already set up (or being set up) for this subscription.');
        await insertGrant(tx, this.row(row, terms, kind, checked.key, checked.data, 'pending', id, now));
        await scheme.recordGrant(tx, terms, checked, id);
        await this.deps.audit.record(tx, tenantOf(row), actor, 'subscription.grant', auditTarget(row.id), {
          network: kind.chain,
          payer: terms.payer,
          grant: id,
        });
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw invalidState('These terms were granted already.');
      throw err;
    }
    await scheme
      .push(sub.mode, kind.chain, id)
      .catch((err) =>
        this.deps.log.warn({ err, grantId: id }, 'grant relay could not be sent now; the sender carries it on'),
      );
    this.charging.nudge();
    return (await this.p.present(this.deps.db, [(await findSubscription(this.deps.db, sub.id))!]))[0]!;
  }

  /** What the payer signs to revoke the grant in force (null when their wallet does it alone). */
  async revokeOffer(check: LinkCheck): Promise<SigningRequest | null> {
    const { grant } = await this.activeGrant(check);
    const scheme = this.charging.schemeOf(grant);
    return scheme ? scheme.revokeOffer(this.charging.stored(grant)) : null;
  }

  /**
   * The payer revokes on the page: Kasse stops charging at once (the grant is `revoked`, its scheduled charges
   * cancelled, `subscription.grant_ended`) and relays the signed revoke, so the chain refuses any charge too.
   */
  async revoke(check: LinkCheck, signed: Record<string, unknown>, actor: Actor): Promise<Subscription> {
    const { sub, grant } = await this.activeGrant(check);
    const scheme = this.charging.schemeOf(grant);
    const stored = this.charging.stored(grant);
    const checked = scheme ? await scheme.checkRevoke(stored, signed) : {};
    const transfer = `${grant.id}-revoke`;
    await withTx(this.deps.db, async (tx) => {
      await submittedCharges(tx, grant.id); // locked before the subscription, as settling a charge takes them
      const row = (await loadSubscription(tx, tenantOf(sub), sub.id, true))!;
      if (!(await this.charging.endGrant(tx, grant, 'revoked'))) throw invalidState('This grant has ended already.');
      await setGrantStatus(tx, grant.id, ['revoked'], 'revoked', this.deps.clock.now(), { revokeTransfer: transfer });
      await scheme?.recordRevoke(tx, stored, checked, transfer);
      await this.deps.audit.record(tx, tenantOf(row), actor, 'subscription.revoke', auditTarget(row.id), {
        grant: grant.id,
      });
      await this.charging.publish(tx, row, ['subscription.grant_ended']);
    });
    await scheme
      ?.push(grant.mode, grant.chain, transfer)
      .catch((err) =>
        this.deps.log.warn({ err, grantId: grant.id }, 'revoke relay could not be sent now; the sender carries it on'),
      );
    return (await this.p.present(this.deps.db, [(await findSubscription(this.deps.db, sub.id))!]))[0]!;
  }

  private async activeGrant(check: LinkCheck): Promise<{ sub: SubscriptionRow; grant: GrantRow }> {
    if (!check.ok) throw notFound('subscription');
    const sub = await findSubscription(this.deps.db, check.subscriptionId);
    if (!sub) throw notFound('subscription');
    const grant = (await currentGrants(this.deps.db, [sub.id])).get(sub.id);
    if (!grant || grant.status !== 'active') throw invalidState('There is no active grant to revoke.');
    return { sub, grant };
  }

  // ---- Following the relay ----

  /** Follows grants whose relay is on its way: active once it landed (then the open period is charged), or failed. */
  async followGrants(): Promise<void> {
    for (const g of await pendingGrants(this.deps.db, 50)) {
      try {
        const scheme = this.charging.schemeOf(g);
        if (!scheme || !g.grant_transfer) continue;
        const state = await scheme.relayState(g.mode, g.chain, g.grant_transfer);
        if (state.status === 'pending') {
          await scheme.push(g.mode, g.chain, g.grant_transfer).catch(() => {});
          continue;
        }
        await withTx(this.deps.db, async (tx) => {
          const row = (await loadSubscription(tx, tenantOf(g), g.subscription_id, true))!;
          if (state.status === 'failed') {
            await setGrantStatus(tx, g.id, ['pending'], 'failed', this.deps.clock.now(), { error: state.message });
            return;
          }
          await this.activate(tx, row, g);
        });
      } catch (err) {
        this.deps.log.error({ err, grantId: g.id }, 'following a subscription grant failed; trying again later');
      }
    }
  }

  /**
   * A grant takes effect (its relay landed, or the simulator granted): active, `subscription.granted`, and the
   * latest period that is due and unpaid now, if the grant starts with it (`firstPeriod`), charged at once. The
   * caller holds the subscription's row lock.
   */
  async activate(tx: Tx, sub: SubscriptionRow, g: GrantRow): Promise<void> {
    const wall = this.deps.clock.now();
    const active = await setGrantStatus(tx, g.id, ['pending'], 'active', wall);
    if (!active) return;
    if (sub.status !== 'cancelled' && sub.collection === 'charge_automatically') {
      const now = clockOf(sub, wall);
      const open = (await invoicesOf(tx, [sub.id])).filter((i) => i.check_at !== null && !i.paid).at(-1);
      if (open && open.due_at.getTime() >= active.starts_at.getTime()) {
        const period = await this.charging.periodOf(sub, open.period, tx);
        const attempts = await periodCharges(tx, sub.id, open.period);
        const busy = attempts.some((c) => c.status === 'scheduled' || c.status === 'submitted');
        if (
          !busy &&
          !period.paid &&
          now < this.charging.windowEnd(sub, active, open.period) &&
          now < period.payableUntil
        ) {
          await insertCharges(tx, [
            { ...this.charging.firstCharge(sub, active, open.period, now, wall), attempt: attempts.length + 1 },
          ]);
          this.charging.wake(tx);
        }
      }
    }
    await this.charging.publish(tx, sub, ['subscription.granted']);
    this.deps.log.info({ grantId: g.id, subscriptionId: sub.id, chain: g.chain }, 'subscription grant active');
  }

  // ---- Test mode: the simulator ----

  /**
   * `POST /test/subscriptions/{id}/simulate`: `grant` gives a simulated grant (on the first test network that takes
   * USDC grants, its wallet funded) — or funds again the wallet of the simulated grant in force; `revoke` revokes
   * the grant in force; `insufficient_funds` empties the simulated wallet, so charges fail until it is granted again.
   * The due, unpaid period is charged at once after a grant; later periods as the test clock's advance reaches them.
   */
  async simulate(t: Tenant, id: string, outcome: SimulateGrantOutcome, actor: Actor): Promise<Subscription> {
    if (t.mode !== 'test') throw new Error(`subscription ${id} of ${t.merchantId}: simulate is for test mode`);
    const first = await loadSubscription(this.deps.db, t, id);
    if (!first) throw notFound('subscription');
    if (first.status === 'cancelled') throw invalidState('This subscription is cancelled.');
    if (first.collection !== 'charge_automatically')
      throw invalidState('This subscription is paid by invoice (collection send_invoice); nothing is granted on it.');
    const kind = outcome === 'grant' ? await this.simulatedKind(t) : null;
    await withTx(this.deps.db, async (tx) => {
      const row = (await loadSubscription(tx, t, id, true))!;
      const wall = this.deps.clock.now();
      const grant = (await currentGrants(tx, [id])).get(id);
      const active = grant?.status === 'active' ? grant : null;
      if (outcome === 'grant') {
        if (active && active.enforcement !== 'simulated')
          throw invalidState('A grant on chain is in force; revoke it before simulating another.');
        if (grant && !active) throw invalidState('A grant is being submitted on chain; wait for it.');
        if (active) await setFunded(tx, active.id, true, wall);
        else {
          const terms = await this.terms(row, kind!.kind, null, kind!.payer, `0x${randomBytes(32).toString('hex')}`);
          const gid = newId('grt', wall.getTime());
          const g = await insertGrant(
            tx,
            this.row(row, terms, kind!.kind, `sim:${gid}`, { salt: terms.salt }, 'pending', gid, wall, true),
          );
          await this.activate(tx, row, g);
        }
      } else {
        if (!active) throw invalidState('There is no active grant on this subscription.');
        if (outcome === 'revoke') {
          await this.charging.endGrant(tx, active, 'revoked');
          await this.charging.publish(tx, row, ['subscription.grant_ended']);
        } else {
          if (active.enforcement !== 'simulated')
            throw invalidState('The grant in force is on chain; the simulator cannot empty its wallet.');
          await setFunded(tx, active.id, false, wall);
        }
      }
      await this.deps.audit.record(tx, t, actor, 'subscription.simulate', auditTarget(row.id), { outcome });
    });
    await this.charging.runDue(id);
    return (await this.p.present(this.deps.db, [(await loadSubscription(this.deps.db, t, id))!]))[0]!;
  }

  /** The first test network taking USDC grants, and a keyless payer address on it. */
  private async simulatedKind(t: Tenant): Promise<{ kind: ChargeKind; payer: string }> {
    for (const network of this.c.chains.networks(t.mode)) {
      if (network.paused) continue;
      const token = network.tokens.find((k) => k.gasless && k.stable && k.decimals >= 2);
      if (!token) continue;
      const payer = this.c.chains.format(network).addressFromBytes(randomBytes(32), network);
      return { kind: { chain: network.id, token, enforcement: 'contract' }, payer };
    }
    throw invalidState('No test network has a USDC the simulator can grant on.');
  }

  // ---- The merchant: back to invoices ----

  /**
   * Switches a charged subscription back to emailed invoices (the dashboard, audited): no period is
   * charged from now on (scheduled charges are cancelled, and a period whose charge had not been tried yet gets its
   * invoice mailed). The payer's grant stays on chain unused until they revoke it on the subscription page.
   */
  async switchToInvoices(t: Tenant, id: string, actor: Actor): Promise<Subscription> {
    await withTx(this.deps.db, async (tx) => {
      const row = await loadSubscription(tx, t, id, true);
      if (!row) throw notFound('subscription');
      if (row.status === 'cancelled') throw invalidState('This subscription is cancelled.');
      if (row.collection === 'send_invoice') throw invalidState('This subscription is already paid by invoice.');
      const wall = this.deps.clock.now();
      await setCollection(tx, id, 'send_invoice', wall);
      await this.charging.stopCharges(tx, row, { subscriptionId: id }, 'The subscription is invoiced by email now.');
      await this.deps.audit.record(tx, t, actor, 'subscription.collection', auditTarget(row.id), {
        collection: 'send_invoice',
      });
    });
    return (await this.p.present(this.deps.db, [(await loadSubscription(this.deps.db, t, id))!]))[0]!;
  }

  // ---- Shared ----

  private assertAddress(mode: Mode, chain: string, address: string, param: string): void {
    const network = this.c.chains.network(mode, chain)!;
    if (typeof address !== 'string' || !this.c.chains.format(network).isValidAddress(address, network))
      throw invalid(`${param} must be an address on ${network.name}.`, param);
  }

  private row(
    sub: SubscriptionRow,
    terms: GrantTerms,
    kind: ChargeKind,
    key: string,
    data: Record<string, unknown>,
    status: 'pending',
    id: string,
    now: Date,
    simulated = false,
  ) {
    return {
      id,
      merchant_id: sub.merchant_id,
      mode: sub.mode,
      subscription_id: sub.id,
      chain: kind.chain,
      token: kind.token.id,
      payer: terms.payer,
      receiver: terms.receiver,
      amount_per_period: terms.amountPerPeriod.toString(),
      period_seconds: terms.periodSeconds,
      starts_at: new Date(terms.start * 1000),
      expires_at: new Date(terms.end * 1000),
      total: terms.total.toString(),
      key,
      terms: JSON.stringify({ ...data, salt: terms.salt }),
      enforcement: simulated ? ('simulated' as const) : kind.enforcement,
      funded: simulated ? true : null,
      status,
      grant_transfer: simulated ? null : id,
      created_at: now,
      updated_at: now,
    };
  }
}

function termsBody(t: GrantTerms): TermsBody {
  return {
    receiver: t.receiver,
    amount_per_period: t.amountPerPeriod.toString(),
    period_seconds: t.periodSeconds,
    start: t.start,
    end: t.end,
    total: t.total.toString(),
    salt: t.salt,
  };
}
