/**
 * Keeps the API reference honest about errors: every error answer a test receives through `ApiClient` is recorded,
 * and when the test's Kasse closes, each must be documented by its operation in the served OpenAPI document (the
 * code among that status's examples). An operation that can answer a code its route does not declare fails the
 * test file that made it answer so, naming the route and the code to add to its `errors`.
 */
import assert from 'node:assert/strict';

interface Answer {
  method: string;
  path: string;
  status: number;
  code: string;
}

const answers = new Map<string, Answer[]>();

/** Notes an answer of the API at `base` (500 is left out: any operation can fail unexpectedly). */
export function recordAnswer(base: string, method: string, path: string, status: number, body: unknown): void {
  const code = (body as { error?: { code?: unknown } } | null)?.error?.code;
  if (status < 400 || status === 500 || typeof code !== 'string') return;
  const list = answers.get(base) ?? [];
  list.push({ method: method.toLowerCase(), path: path.split('?')[0]!, status, code });
  answers.set(base, list);
}

function operationOf(doc: any, method: string, path: string): any {
  const segments = path.split('/');
  for (const [template, ops] of Object.entries<any>(doc.paths ?? {})) {
    const parts = template.split('/');
    if (parts.length !== segments.length || !ops[method]) continue;
    if (parts.every((p, i) => (p.startsWith('{') && segments[i] !== '') || p === segments[i]))
      return { template, op: ops[method] };
  }
  return null;
}

/** Fails when an answer recorded for these API base URLs is not documented by its operation. */
export async function assertDocumentedErrors(bases: string[]): Promise<void> {
  const problems = new Set<string>();
  for (const base of bases) {
    const list = answers.get(base);
    answers.delete(base);
    if (!list?.length) continue;
    const doc = await (await fetch(`${base}/openapi.json`)).json();
    for (const a of list) {
      const found = operationOf(doc, a.method, a.path);
      if (!found) continue;
      const examples = found.op.responses?.[String(a.status)]?.content?.['application/json']?.examples ?? {};
      if (!(a.code in examples))
        problems.add(
          `${a.method.toUpperCase()} ${found.template} answered ${a.status} ${a.code}, which its operation does not document`,
        );
    }
  }
  assert.deepEqual(
    [...problems],
    [],
    "every error an operation answers is in its documented responses (add the code to the route schema's `errors`)",
  );
}
