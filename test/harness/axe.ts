/**
 * axe-core in real Chromium: the accessibility engine is evaluated into the page through the DevTools protocol (so
 * the page's strict CSP stays as served) and run against WCAG 2.0/2.1 A and AA rules. A test asserts the list of
 * violations is empty; each entry names the rule, its help text and the offending elements so a failure says what to
 * mend.
 */
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';

const axeSource: string = createRequire(import.meta.url)('axe-core').source;

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  targets: string[];
}

/** Runs axe on the page as it is now and returns the WCAG 2.1 AA violations (empty when there are none). */
export async function axeViolations(page: Page): Promise<AxeViolation[]> {
  await page.evaluate(axeSource);
  return page.evaluate(async () => {
    const axe = (globalThis as any).axe;
    const result = await axe.run(document, {
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] },
      resultTypes: ['violations'],
    });
    return result.violations.map((v: any) => ({
      id: v.id,
      impact: v.impact ?? null,
      help: v.help,
      targets: v.nodes.map((n: any) => String(n.target.join(' '))),
    }));
  });
}

/** One line per violation, for an assertion message. */
export function describeViolations(violations: AxeViolation[]): string {
  return violations.map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.targets.slice(0, 5).join(', ')}`).join('\n');
}
