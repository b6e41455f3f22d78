/** Test data for the scenarios, and the check that what a client read back is what was written. */
import type { ClientCapabilities, ConsumeSpec, ReadRecord, TestRecord } from './types.js';

/**
 * `perPartition` records on each of `partitions` partitions: keys (one null), a header set per partition
 * (kcat sets headers per call), and
 * CreateTime timestamps a minute in the past, one ms apart. Text only, no tabs or newlines (kcat).
 */
export function makeRecords(tag: string, partitions: number, perPartition: number, base = Date.now() - 60_000): TestRecord[] {
  const out: TestRecord[] = [];
  for (let p = 0; p < partitions; p++) {
    for (let i = 0; i < perPartition; i++) {
      const n = p * perPartition + i;
      out.push({
        partition: p,
        key: i === 1 ? null : `${tag}-key-${n}`,
        value: `${tag}-value-${n}-${'x'.repeat((n * 7) % 40)}`,
        headers:
          p % 2 === 0
            ? [
                ['trace', `t-${p}`],
                ['tag', tag],
              ]
            : [['tag', tag]],
        timestamp: base + n,
      });
    }
  }
  return out;
}

/** The consume spec that reads back everything `records` put into a fresh topic. */
export function readBackSpec(topic: string, records: TestRecord[], timeoutMs = 20000): ConsumeSpec {
  const counts = new Map<number, number>();
  for (const r of records) counts.set(r.partition, (counts.get(r.partition) ?? 0) + 1);
  return {
    topic,
    timeoutMs,
    partitions: [...counts].sort((a, b) => a[0] - b[0]).map(([partition, count]) => ({ partition, from: 0, count })),
  };
}

function headerText(h: [string, string][]): string {
  return JSON.stringify([...h].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)));
}

/**
 * Throws with the first differences when `got` is not exactly `sent`, partition by partition, in
 * order, with offsets counting from `from` (0). Timestamps the client could not set must lie in
 * [producedAfter, now]; headers set per call are compared as written by that client.
 */
export function checkReadBack(sent: TestRecord[], got: ReadRecord[], caps: ClientCapabilities, producedAfter: number, from = 0): string {
  const problems: string[] = [];
  const partitions = [...new Set(sent.map((r) => r.partition))].sort((a, b) => a - b);
  const now = Date.now() + 1000;
  for (const p of partitions) {
    const want = sent.filter((r) => r.partition === p);
    const have = got.filter((r) => r.partition === p).sort((a, b) => a.offset - b.offset);
    if (have.length !== want.length) problems.push(`partition ${p}: read ${have.length} records, wrote ${want.length}`);
    for (let i = 0; i < Math.min(want.length, have.length) && problems.length < 6; i++) {
      const w = want[i]!;
      const h = have[i]!;
      const at = `partition ${p} record ${i}`;
      if (h.offset !== from + i) problems.push(`${at}: offset ${h.offset}, expected ${from + i}`);
      if (h.key !== w.key) problems.push(`${at}: key ${JSON.stringify(h.key)}, expected ${JSON.stringify(w.key)}`);
      if (h.value !== w.value) problems.push(`${at}: value ${JSON.stringify(h.value)}, expected ${JSON.stringify(w.value)}`);
      if (headerText(h.headers) !== headerText(caps.headers === 'none' ? [] : w.headers))
        problems.push(`${at}: headers ${headerText(h.headers)}, expected ${headerText(w.headers)}`);
      if (caps.timestamps ? h.timestamp !== w.timestamp : h.timestamp < producedAfter - 1000 || h.timestamp > now) {
        problems.push(`${at}: timestamp ${h.timestamp}, expected ${caps.timestamps ? w.timestamp : `within [${producedAfter}, now]`}`);
      }
    }
  }
  if (problems.length > 0) throw new Error(problems.slice(0, 6).join('; '));
  const headers = caps.headers === 'none' ? 'no headers (format 0/1)' : 'headers';
  return `${sent.length} records on ${partitions.length} partition(s): offsets, keys (incl. null), values, ${headers}, ${caps.timestamps ? 'timestamps set by the client' : 'producer-stamped timestamps'}`;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Rejects after `ms` with a message naming `what`. */
export async function withTimeout<T>(what: string, ms: number, p: Promise<T>): Promise<T> {
  let t: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => (t = setTimeout(() => reject(new Error(`${what}: timed out after ${ms} ms`)), ms))),
    ]);
  } finally {
    clearTimeout(t);
  }
}
