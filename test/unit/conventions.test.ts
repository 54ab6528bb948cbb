/**
 * One way to say who acts and for whom (docs/ARCHITECTURE.md, "Tenant first" and "Every change names its actor"),
 * checked on the parsed source of every module: a method or exported function takes a merchant's data of one mode
 * as one `Tenant`, never a mode and a merchant id side by side nor a scope of its own; the `Tenant` comes first
 * (after the database handle or transaction when it takes one); an `Actor` is never optional; no code decides
 * whether to audit (`if (actor)`, `actor && …`) or hands an audit callback (`also`) to another module; and a public
 * method that takes a `Tenant` and writes (an INSERT, UPDATE or DELETE, or a transaction) takes a required `Actor`.
 * The last test runs the same scan over probe sources that break each rule, so every rule is seen to fail.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import ts from 'typescript';
import { KASSE_HOME } from '../../src/config.ts';

const MODULES = join(KASSE_HOME, 'src', 'modules');

/** What a function runs on (the database or transaction, its dependencies): the only arguments before the Tenant. */
const RUNS_ON = /^(db|tx|deps|chains|engine)$/;

/**
 * Public methods that take a Tenant and write but make no change of a merchant's data an actor is named for: each
 * with its reason.
 */
const WRITES_WITHOUT_ACTOR: Record<string, string> = {
  'payments/engine.ts locked': "runs the caller's change under the payment's lock; the caller's method names the actor",
};

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return name === 'migrations' ? [] : files(p);
    return /\.ts$/.test(name) ? [p] : [];
  });
}

interface Fn {
  name: string;
  params: readonly ts.ParameterDeclaration[];
  body: ts.Node | undefined;
  /** A class method that is not private, or an exported function. */
  isPublic: boolean;
  isMethod: boolean;
}

function functionsOf(source: ts.SourceFile): Fn[] {
  const out: Fn[] = [];
  const has = (n: ts.Node, kind: ts.SyntaxKind) =>
    ts.canHaveModifiers(n) && (ts.getModifiers(n) ?? []).some((m) => m.kind === kind);
  const visit = (n: ts.Node) => {
    if (ts.isMethodDeclaration(n) && n.body) {
      const isPrivate = has(n, ts.SyntaxKind.PrivateKeyword) || ts.isPrivateIdentifier(n.name);
      out.push({
        name: n.name.getText(source),
        params: n.parameters,
        body: n.body,
        isPublic: !isPrivate,
        isMethod: true,
      });
    } else if (ts.isFunctionDeclaration(n) && n.body && n.name) {
      const isPublic = has(n, ts.SyntaxKind.ExportKeyword);
      out.push({ name: n.name.text, params: n.parameters, body: n.body, isPublic, isMethod: false });
    } else if (ts.isConstructorDeclaration(n)) {
      return; // dependencies, not calls on a merchant's data
    }
    ts.forEachChild(n, visit);
  };
  visit(source);
  return out;
}

/** What breaks the conventions in `text` (a module file named `file`), one line each. */
export function violations(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const at = (n: ts.Node) => `${file}:${source.getLineAndCharacterOfPosition(n.getStart(source)).line + 1}`;
  for (const fn of functionsOf(source)) {
    const typeOf = (p: ts.ParameterDeclaration) => p.type?.getText(source).replace(/\s+/g, ' ') ?? '';
    const nameOf = (p: ts.ParameterDeclaration) => p.name.getText(source);
    const named = `${fn.name}(${fn.params.map(nameOf).join(', ')})`;
    const takesMode = fn.params.some((p) => typeOf(p) === 'Mode');
    const takesMerchant = fn.params.some((p) => /^merchantId$|^merchant_id$/.test(nameOf(p)));
    if (fn.isPublic && takesMode && takesMerchant)
      found.push(`${at(fn.params[0]!)} ${named} takes a mode and a merchant apart`);
    for (const p of fn.params) {
      if (fn.isPublic && /Scope$/.test(typeOf(p)) && typeOf(p) !== 'AuditScope')
        found.push(`${at(p)} ${named} takes a scope of its own (${typeOf(p)}) instead of a Tenant`);
      if (/(^|[^\w])Actor([^\w]|$)/.test(typeOf(p)) || nameOf(p) === 'actor') {
        if (p.questionToken || p.initializer || /\bundefined\b|\bnull\b/.test(typeOf(p)))
          found.push(`${at(p)} ${named} takes an optional Actor`);
      }
      if (nameOf(p) === 'also') found.push(`${at(p)} ${named} takes an \`also\` callback`);
    }
    const tenantAt = fn.params.findIndex((p) => typeOf(p) === 'Tenant');
    if (fn.isPublic && tenantAt > 0) {
      if (!fn.params.slice(0, tenantAt).every((p) => RUNS_ON.test(nameOf(p))))
        found.push(`${at(fn.params[tenantAt]!)} ${named} takes its Tenant after other arguments`);
    }
    const takesActor = fn.params.some((p) => typeOf(p) === 'Actor');
    const excused = `${file.replace(/^.*modules\//, '')} ${fn.name}` in WRITES_WITHOUT_ACTOR;
    if (fn.isMethod && fn.isPublic && tenantAt >= 0 && !takesActor && fn.body && !excused) {
      const body = fn.body.getText(source);
      if (/\.(insertInto|updateTable|deleteFrom)\(|\bwithTx\(/.test(body))
        found.push(`${at(fn.params[tenantAt]!)} ${named} writes a tenant's data but names no Actor`);
    }
  }
  // Deciding whether to audit is the helper's alone.
  const visit = (n: ts.Node) => {
    if (ts.isIfStatement(n) && /^!?actor$/.test(n.expression.getText(source).trim()))
      found.push(`${at(n)} decides whether to audit (\`if (${n.expression.getText(source)})\`)`);
    if (
      ts.isBinaryExpression(n) &&
      n.operatorToken.kind === ts.SyntaxKind.AmpersandAmpersandToken &&
      n.left.getText(source) === 'actor'
    )
      found.push(`${at(n)} decides whether to audit (\`actor && …\`)`);
    ts.forEachChild(n, visit);
  };
  visit(source);
  return found;
}

test('every module method on a tenant takes one Tenant first, and every change a required Actor', () => {
  const all = files(MODULES);
  assert.ok(all.length > 100, `${all.length} module files scanned`);
  const found = all.flatMap((f) => violations(relative(KASSE_HOME, f), readFileSync(f, 'utf8')));
  assert.deepEqual(found, []);
});

test('the scan fails on each way of breaking the conventions', () => {
  const probe = `
    import type { Mode } from '../../core/mode.ts';
    export class ProbeService {
      async get(mode: Mode, merchantId: string, id: string) { return id; }
      async list(scope: PaymentScope, q: object) { return q; }
      async cancel(tenant: Tenant, id: string, actor?: Actor) {
        if (actor) await this.audit.record(this.db, tenant, actor, 'probe.cancel');
      }
      async pause(id: string, tenant: Tenant, actor: Actor) { return id; }
      async rename(tenant: Tenant, id: string, name: string) {
        await this.db.updateTable('probes').set({ name }).where('id', '=', id).execute();
      }
      async update(merchantId: string, patch: object, also?: (tx: Tx) => Promise<void>) { return patch; }
      async archive(tenant: Tenant, id: string, actor: Actor | undefined) {
        return actor && this.audit.record(this.db, tenant, actor, 'probe.archive');
      }
    }
    export async function probeRow(db: DbOrTx, tenant: Tenant, id: string) { return id; }
  `;
  const found = violations('probe.ts', probe).map((v) => v.replace(/^probe\.ts:\d+ /, ''));
  assert.deepEqual(found, [
    'get(mode, merchantId, id) takes a mode and a merchant apart',
    'list(scope, q) takes a scope of its own (PaymentScope) instead of a Tenant',
    'cancel(tenant, id, actor) takes an optional Actor',
    'pause(id, tenant, actor) takes its Tenant after other arguments',
    "rename(tenant, id, name) writes a tenant's data but names no Actor",
    'update(merchantId, patch, also) takes an `also` callback',
    'archive(tenant, id, actor) takes an optional Actor',
    'decides whether to audit (`if (actor)`)',
    'decides whether to audit (`actor && …`)',
  ]);
});
