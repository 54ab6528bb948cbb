/**
 * Local chain software started once per test run and shared by every test file through environment variables.
 * Started only when a selected test file needs it (its path names the chain).
 */
export interface Infrastructure {
  env: Record<string, string>;
  stop(): Promise<void>;
}

type Starter = (files: string[]) => Promise<Infrastructure | null>;

const starters: Starter[] = [];

/** Chain harnesses add themselves here. */
export function registerInfrastructure(starter: Starter): void {
  starters.push(starter);
}

export async function startInfrastructure(files: string[]): Promise<Infrastructure> {
  await import('./infrastructure-list.ts');
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
