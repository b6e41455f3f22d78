/**
 * The checker of a power-loss image (see crash-image.ts) of the workload in workload.ts: gregor is
 * started in-process on the image (recovery runs), every log is opened, the broker is stopped, and:
 * (1) every partition directory passes the full integrity scan (log-scan.ts) and its log end is
 * what the broker reported; (2) the topic's records are offsets 0..n-1 with their values as sent, n
 * at least every record whose bytes were synced (the synced floor) and, when the configuration
 * promises it, every acknowledged record; (3) the topic exists if its creation was acknowledged;
 * (4) optionally (a real client, slower): kafkajs reads every record below the log end with its
 * value, and the group's committed offset is one that was committed, at least the last
 * acknowledged one when the configuration promises it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import type { LogManager } from '../../../lib/log/log-dirs.js';
import { parseEntryHeader } from '../../../lib/log/segment-format.js';
import { startTestBroker } from '../broker.js';
import { KafkajsPartitionReader } from '../kafkajs-reader.js';
import { scanPartitionDir } from '../log-scan.js';
import type { JournalEntry } from './crash-image.js';
import { PL_GROUP, PL_TOPIC, plValue, type Durability } from './workload.js';

interface Batch {
  baseOffset: number;
  lastOffset: number;
  bytes: Buffer;
}

/** The whole entries of a partition dir's segments, in order, up to the first that is not whole and valid. */
export function batchesOf(dir: string): Batch[] {
  if (!fs.existsSync(dir)) return [];
  const out: Batch[] = [];
  for (const name of fs
    .readdirSync(dir)
    .filter((n) => /^\d{20}\.log$/.test(n))
    .sort()) {
    const buf = fs.readFileSync(path.join(dir, name));
    for (let p = 0; p < buf.length;) {
      const h = parseEntryHeader(buf, p, buf.length - p, p);
      if (h === null || typeof h === 'string' || p + h.size > buf.length) return out;
      out.push({ baseOffset: Number(h.baseOffset), lastOffset: Number(h.lastOffset), bytes: buf.subarray(p, p + h.size) });
      p += h.size;
    }
  }
  return out;
}

/** How many records from offset 0 on are whole and hold their values: offsets 0..n-1 with no gap. */
export function recordsFromStart(batches: readonly Batch[]): { n: number; problems: string[] } {
  let n = 0;
  const problems: string[] = [];
  for (const b of batches) {
    if (b.baseOffset !== n) {
      problems.push(`batch at offset ${b.baseOffset} where ${n} was expected`);
      break;
    }
    for (let o = b.baseOffset; o <= b.lastOffset; o++) {
      if (b.bytes.indexOf(plValue(o)) < 0) problems.push(`offset ${o} does not hold its value`);
    }
    n = b.lastOffset + 1;
  }
  return { n, problems };
}

/** Reads [0, end) of the topic with kafkajs's own Fetch and decoding: every offset in order with its value. */
async function readThroughKafkajs(bootstrap: string, end: bigint): Promise<string[]> {
  if (end === 0n) return [];
  const reader = new KafkajsPartitionReader([bootstrap]);
  await reader.connect(PL_TOPIC);
  try {
    // a log end beyond its records would have the reader wait for ever: bounded here
    let timer: NodeJS.Timeout | undefined;
    const stuck = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), 20000)));
    const msgs = await Promise.race([reader.readAll(PL_TOPIC, 0, 0n, end), stuck]);
    clearTimeout(timer);
    if (msgs === null) return [`kafkajs did not read up to the log end ${end} in 20 s`];
    const bad = msgs.findIndex((m, i) => m.offset !== String(i) || m.value?.toString() !== plValue(i));
    if (msgs.length !== Number(end)) return [`kafkajs read ${msgs.length} records below the log end ${end}`];
    return bad < 0 ? [] : [`kafkajs read offset ${msgs[bad]?.offset} with a wrong offset or value at ${bad}`];
  } finally {
    await reader.disconnect();
  }
}

export interface Expectation {
  durability: Durability;
  /** markers journaled before the crash point */
  markers: readonly JournalEntry[];
  /** records whose bytes were synced before the crash point (from the synced image, before recovery) */
  syncedFloor: number;
  /** all committed offsets the workload made (any of them may survive) */
  committedValues: ReadonlySet<number>;
  viaClient: boolean;
}

/** Problems found after recovering `image` (empty: sound). The image is changed by the recovery. */
export async function checkImage(image: string, config: Record<string, string>, exp: Expectation): Promise<string[]> {
  const problems: string[] = [];
  const acked = exp.markers.filter((m) => m.op === 'ack').length;
  const created = exp.markers.some((m) => m.op === 'created');
  const commits = exp.markers.filter((m) => m.op === 'commit').map((m) => m['offset'] as number);
  const strict = exp.durability !== 'default';
  let b;
  try {
    b = await startTestBroker(config, { dataDir: image, keepData: true });
  } catch (err) {
    return [`broker did not start: ${(err as Error).message}`];
  }
  const ends = new Map<string, bigint>();
  let committed: number | null = null;
  try {
    const lm = (b.broker as unknown as { logManager: LogManager }).logManager;
    for (const log of lm.all()) {
      await log.open();
      ends.set(`${log.topic}-${log.partition}`, log.logEndOffset);
    }
    if (exp.viaClient && created) {
      const admin = new Kafka({ brokers: [b.bootstrap], logLevel: logLevel.NOTHING, retry: { retries: 2 } }).admin();
      await admin.connect();
      try {
        const topics = await admin.listTopics();
        if (!topics.includes(PL_TOPIC)) problems.push(`topic ${PL_TOPIC} was created (acknowledged) and is gone`);
        const [got] = await admin.fetchOffsets({ groupId: PL_GROUP, topics: [PL_TOPIC] });
        committed = Number(got?.partitions[0]?.offset ?? -1);
      } finally {
        await admin.disconnect();
      }
      problems.push(...(await readThroughKafkajs(b.bootstrap, ends.get(`${PL_TOPIC}-0`) ?? 0n)));
    }
  } catch (err) {
    problems.push(`after recovery: ${(err as Error).message}`);
  } finally {
    await b.stop();
  }
  for (const name of fs.readdirSync(image)) {
    const dir = path.join(image, name);
    if (!/-\d+$/.test(name) || !fs.statSync(dir).isDirectory()) continue;
    const scan = scanPartitionDir(dir);
    for (const p of scan.problems) problems.push(`${name}: ${p}`);
    const end = ends.get(name);
    if (end !== undefined && scan.nextOffset >= 0n && end !== scan.nextOffset)
      problems.push(`${name}: the broker said log end ${end}, the files end at ${scan.nextOffset}`);
  }
  const { n, problems: rp } = recordsFromStart(batchesOf(path.join(image, `${PL_TOPIC}-0`)));
  problems.push(...rp);
  if (n < exp.syncedFloor) problems.push(`${n} records after recovery, ${exp.syncedFloor} were synced`);
  if (strict && n < acked) problems.push(`${n} records after recovery, ${acked} were acknowledged`);
  if (created && !fs.existsSync(path.join(image, `${PL_TOPIC}-0`)) && acked > 0 && strict) problems.push(`the partition directory is gone`);
  if (committed !== null) {
    if (committed >= 0 && !exp.committedValues.has(committed)) problems.push(`committed offset ${committed} was never committed`);
    const last = commits[commits.length - 1];
    if (strict && last !== undefined && committed < last) problems.push(`committed offset ${committed}, ${last} was acknowledged`);
  }
  return problems;
}
