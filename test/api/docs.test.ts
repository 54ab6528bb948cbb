/**
 * The documentation against the program, where drift can be caught mechanically: every `kasse …` command line in
 * README.md and docs/*.md reads against the CLI's command table (an unknown command or option fails); every API path
 * they name is an operation of the OpenAPI document the test API serves (with its method, when one is given); every
 * environment variable they name is one Kasse reads, and the README's configuration table lists exactly the
 * variables config.ts reads.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { commandTable, readCommandLine } from '../../src/cli/program.ts';
import { startTestKasse, type TestKasse } from '../harness/app.ts';
import { KASSE_HOME } from '../../src/config.ts';

const DOCS = [
  'README.md',
  ...readdirSync(join(KASSE_HOME, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
].map((file) => ({
  file,
  text: readFileSync(join(KASSE_HOME, file), 'utf8'),
}));

let t: TestKasse;
before(async () => {
  t = await startTestKasse();
});
after(() => t.close());

/** The code of a Markdown text: each line of its fenced blocks (`\`-continued lines joined), and each inline span. */
function codeOf(markdown: string): string[] {
  const out: string[] = [];
  const prose = markdown.replace(/^```[^\n]*\n([\s\S]*?)^```/gm, (_m, block: string) => {
    out.push(...block.replace(/\\\n\s*/g, ' ').split('\n'));
    return '';
  });
  // Spans pair up within a paragraph; one may be broken over two of its lines.
  for (const paragraph of prose.split(/\n\s*\n/))
    for (const m of paragraph.matchAll(/`([^`]+)`/g)) out.push(m[1]!.replace(/\s+/g, ' '));
  return out;
}

/** Shell words: quotes removed; `[`, `]` of optional parts dropped; a shell operator or comment ends the command. */
function shellWords(text: string): string[] {
  const words: string[] = [];
  for (const m of text.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)) {
    const word = m[1] ?? m[2] ?? m[3]!;
    if (m[3] !== undefined && /^(\||\|\||&&|;|&|#|>|2>|\)|→)/.test(word)) break;
    const bare = m[3] !== undefined ? word.replace(/[[\]]/g, '') : word;
    if (bare !== '') words.push(bare);
  }
  return words;
}

/** Each `kasse …`, `npm run [-s] kasse -- …` or `npx kasse …` command line in the docs' code, as words after `kasse`. */
function commandLines(markdown: string): string[][] {
  const lines: string[][] = [];
  for (const code of codeOf(markdown)) {
    for (const m of code.matchAll(/(?:^|[\s($])(?:npm run (?:-s )?kasse --|npx kasse|kasse)(?=\s|$)(.*)$/gm)) {
      const words = shellWords(m[1]!);
      // `kasse <command>`, `kasse …`: a placeholder, not a command line; `kasse evm …`: the group's commands.
      if (words.length === 0 || !/^(-|[a-z])/.test(words[0]!)) continue;
      if (words.at(-1) === '…' && !words.some((w) => w.startsWith('-'))) words.pop();
      lines.push(...alternatives(words));
    }
  }
  return lines;
}

/** `kasse solana sweep|status --json` → both command lines (alternatives among the command's words, before any flag). */
function alternatives(words: string[]): string[][] {
  const firstFlag = words.findIndex((w) => w.startsWith('-'));
  const i = words.slice(0, firstFlag === -1 ? words.length : firstFlag).findIndex((w) => w.includes('|'));
  if (i === -1) return [words];
  return words[i]!.split('|').flatMap((w) => alternatives([...words.slice(0, i), w, ...words.slice(i + 1)]));
}

test('every kasse command line in the docs names a command and only its flags', async () => {
  const table = await commandTable();
  let checked = 0;
  const wrong: string[] = [];
  for (const { file, text } of DOCS) {
    for (const words of commandLines(text)) {
      checked++;
      try {
        readCommandLine(words, table);
      } catch (err) {
        wrong.push(`${file}: kasse ${words.join(' ')} — ${(err as Error).message.split('\n')[0]}`);
      }
    }
  }
  assert.deepEqual(wrong, []);
  assert.ok(checked > 30, `${checked} command lines read`);
  // The reading is strict: what the docs could get wrong is refused.
  for (const words of [
    ['merchant', 'create', '--nmae', 'Shop'],
    ['mail', 'lsit'],
    ['evm', 'status', '--chain'],
  ])
    assert.throws(() => readCommandLine(words, table), words.join(' '));
});

/** Checkout-host pages, probes and the API's own documents: paths the docs name that are not API operations. */
const NOT_OPERATIONS =
  /^\/(p|l|s|dashboard|assets)(\/|$)|^\/(checkout\.js|healthz|readyz|metrics|docs|openapi\.json)(\/|$)/;

/** API paths the docs name: `METHOD /path`, `…/v1/path`, `$API/path`, `{base_url}/path`. */
function apiPaths(markdown: string): Array<{ method: string | null; path: string }> {
  const found: Array<{ method: string | null; path: string }> = [];
  // Trailing punctuation, and the `>` of an autolink (`<http://…/v1/docs>`) but not of a placeholder (`/l/<slug>`).
  const clean = (p: string) => p.replace(/[.:]+$/, '').replace(/^([^<]*)>$/, '$1');
  for (const m of markdown.matchAll(/\b(GET|POST|PATCH|PUT|DELETE) (\/[^\s`'"),;*?\]]*)/g)) {
    const path = clean(m[2]!.replace(/^\/v1(?=\/)/, ''));
    if (!NOT_OPERATIONS.test(path)) found.push({ method: m[1]!, path });
  }
  for (const m of markdown.matchAll(
    /(?<!(GET|POST|PATCH|PUT|DELETE) )(?:\/v1|\$API|\{base_url\})(\/[^\s`'"),;*?\]]*)/g,
  )) {
    const path = clean(m[2]!);
    if (!NOT_OPERATIONS.test(path)) found.push({ method: null, path });
  }
  return found;
}

test('every API path the docs name is an operation of the OpenAPI document', async () => {
  const doc = (await (await fetch(`${t.urls.test}/openapi.json`)).json()) as {
    paths: Record<string, Record<string, unknown>>;
  };
  // `/payments/{id}` matches `/payments/{id}`, `/payments/<id>` and `/payments/pay_…`.
  const operations = Object.entries(doc.paths).map(([path, ops]) => ({
    path,
    re: new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`),
    methods: Object.keys(ops).map((x) => x.toUpperCase()),
  }));
  let checked = 0;
  const wrong: string[] = [];
  for (const { file, text } of DOCS) {
    for (const { method, path } of apiPaths(text)) {
      checked++;
      const op = operations.find((o) => o.re.test(path));
      if (!op) wrong.push(`${file}: ${method ?? ''} ${path} is no path of the API`);
      else if (method && !op.methods.includes(method))
        wrong.push(`${file}: ${method} ${path} — the API has ${op.methods.join(', ')} ${op.path}`);
    }
  }
  assert.deepEqual(wrong, []);
  assert.ok(checked > 50, `${checked} paths read`);
});

/** Source files, recursively. */
function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? (name === 'node_modules' ? [] : sources(p)) : name.endsWith('.ts') ? [p] : [];
  });
}

/** Variables a source reads: `env.NAME`, `env['NAME']`, or the name as a string (`int(env, 'NAME', …)`). */
function variablesRead(code: string): Set<string> {
  return new Set([...code.matchAll(/(?:env\.|['"])(KASSE_[A-Z0-9_]+|DATABASE_URL)\b/g)].map((m) => m[1]!));
}

const VARIABLE = /\b(KASSE_[A-Z0-9_]+|DATABASE_URL)\b/g;
/** Named in the docs but read by the merchant's own program: the webhook handler sample of docs/webhooks.md. */
const SAMPLE_APP_VARIABLES = new Set(['KASSE_WEBHOOK_SECRET']);

test('every environment variable the docs name is read by Kasse, and the README configures every one config.ts reads', () => {
  // Kasse reads them in src/; the test command and its harness read the KASSE_TEST_* ones the docs describe.
  const read = new Set(
    [
      ...sources(join(KASSE_HOME, 'src')),
      ...sources(join(KASSE_HOME, 'test')),
      ...sources(join(KASSE_HOME, 'bench')),
    ].flatMap((f) => [...variablesRead(readFileSync(f, 'utf8'))]),
  );
  const wrong: string[] = [];
  for (const { file, text } of DOCS) {
    for (const m of text.matchAll(VARIABLE))
      if (!read.has(m[1]!) && !SAMPLE_APP_VARIABLES.has(m[1]!)) wrong.push(`${file}: ${m[1]} is read nowhere`);
  }
  assert.deepEqual([...new Set(wrong)], []);

  const readme = DOCS.find((d) => d.file === 'README.md')!.text;
  const section = /^## Configuration\n([\s\S]*?)^## /m.exec(readme)![1]!;
  const configured = new Set(
    section
      .split('\n')
      .filter((l) => l.startsWith('| `'))
      .flatMap((l) => [...l.split('|')[1]!.matchAll(VARIABLE)].map((m) => m[1]!)),
  );
  const config = variablesRead(readFileSync(join(KASSE_HOME, 'src/config.ts'), 'utf8'));
  assert.deepEqual(
    [...configured].sort(),
    [...config].sort(),
    "the README's configuration table against src/config.ts",
  );
});

test('every file or folder of the code the docs point at exists', () => {
  const wrong: string[] = [];
  for (const { file, text } of DOCS) {
    // `src/web/page.ts`, `test/harness/`; not a glob (`config/networks.*.json`) nor prose ("a test/live switch").
    for (const m of text.matchAll(
      /(?<![/\w$}.-])((?:src|test|bench|sdk|config|contracts|bin)\/[\w./-]*[\w/])(?![\w.]*\*)/g,
    )) {
      const path = m[1]!;
      if (!/\/$|\.\w+$|\/.*\//.test(path)) continue;
      if (!existsSync(join(KASSE_HOME, path))) wrong.push(`${file}: ${path}`);
    }
  }
  assert.deepEqual(wrong, []);
});
