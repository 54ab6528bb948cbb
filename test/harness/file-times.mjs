/**
 * A test reporter (`--test-reporter`) that writes each test file's wall time (the runner's `test:complete` event for
 * the file itself) as `milliseconds<TAB>file` lines; test/run.ts prints the slowest files after a run so the suite's
 * time can be seen where it goes.
 *
 * @param {AsyncIterable<{ type: string, data?: { file?: string, name?: string, nesting?: number,
 *   details?: { duration_ms?: number } } }>} source
 */
export default async function* fileTimes(source) {
  for await (const { type, data } of source) {
    if (type === 'test:complete' && data?.nesting === 0 && data.file && data.name === data.file)
      yield `${Math.round(data.details?.duration_ms ?? 0)}\t${data.file}\n`;
  }
}
