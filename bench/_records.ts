/**
 * Where a benchmark's run is kept: bench/results/<name>/<UTC date and time>.json, one file per run, named after the
 * record's own `date` (2026-11-27T01:57:50.845Z → 2026-11-27T015750Z.json). bench/run.ts writes records by it and
 * test/unit/bench-figures.test.ts checks every kept record against it.
 */

/** The file name's time stamp for a record dated `date`: the ISO date and the time to the second, without colons. */
export function recordStamp(date: Date): string {
  const iso = date.toISOString();
  return `${iso.slice(0, 10)}T${iso.slice(11, 19).replaceAll(':', '')}Z`;
}

/** The path, from the Kasse directory, of the record of `name`'s run dated `date`. */
export function recordPath(name: string, date: Date): string {
  return `bench/results/${name}/${recordStamp(date)}.json`;
}
