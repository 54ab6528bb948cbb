/**
 * Local chain software started once per test run and shared by every test file through environment variables.
 * Started only when a selected test file needs it (its path names the chain).
 *
 * A chain family's harness registers itself from `test/<family>/infrastructure.ts`, found by that name (every folder
 * of test/ is looked at), so a new family's test tooling stays in its own test folder.
 */
import { existsSync, readdirSync } from 'node:fs';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';

const TEST_DIR = new URL('../', import.meta.url);
/** `infrastructure.ts`, or `.js` when this file runs compiled. */
const HARNESS = `infrastructure${extname(fileURLToPath(import.meta.url))}`;
export interface Infrastructure {
  env: Record<string, string>;
  stop(): Promise<void>;
}

type Starter = (files: string[]) => Promise<Infrastructure | null>;

const starters: Starter[] = [];

/** Chain harnesses add themselves here (from their family's `test/<family>/infrastructure.ts`). */
export function registerInfrastructure(starter: Starter): void {
  starters.push(starter);
}

export async function startInfrastructure(files: string[]): Promise<Infrastructure> {
  await registerFamilyHarnesses();
  const started: Infrastructure[] = [];
  for (const s of starters) {
    const infra = await s(files);
    if (infra) started.push(infra);
  }
  return {
    env: Object.assign({}, ...started.map((s) => s.env)),
    stop: async () => {
      for (const s of started.reverse()) await s.stop().catch(() => {});
    },
  };
}

let registered: Promise<void> | null = null;

/** Imports every `test/<folder>/infrastructure.ts`, once: each registers its family's starter. */
function registerFamilyHarnesses(): Promise<void> {
  registered ??= (async () => {
    const folders = readdirSync(TEST_DIR, { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name)
      .sort();
    for (const name of folders) {
      const file = new URL(`${name}/${HARNESS}`, TEST_DIR);
      if (existsSync(file)) await import(file.href);
    }
  })();
  return registered;
}
