import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import type { PartitionLog } from '../../../lib/log/partition-log.js';
import { openLog, v2 } from './helpers.js';
import type { LogConfig } from '../../../lib/log/log-config.js';

export const PID = 1000n;

/** A batch of an idempotent (or transactional) producer. */
export function idem(n: number, seq: number, opts: { pid?: bigint; epoch?: number; txn?: boolean; prefix?: string } = {}): Buffer {
  return v2(n, {
    producerId: opts.pid ?? PID,
    producerEpoch: opts.epoch ?? 0,
    baseSequence: seq,
    isTransactional: opts.txn === true,
    prefix: opts.prefix ?? `s${seq}`,
  });
}

/** What a replica fetcher does: reads the leader from the follower's log end and appends it as it is. */
export async function replicate(leader: PartitionLog, follower: PartitionLog, maxBytes = 1 << 20): Promise<void> {
  while (follower.logEndOffset < leader.logEndOffset) {
    const r = await leader.read(follower.logEndOffset, maxBytes, { minOneMessage: true });
    const { written } = await follower.appendAsFollower(Buffer.concat(r.records));
    await written;
  }
}

/** The files of a partition directory by name (the leader's and the follower's must match). */
export function partitionFiles(dir: string): Map<string, Buffer> {
  const p = path.join(dir, 'topic-0');
  const out = new Map<string, Buffer>();
  for (const name of fs.readdirSync(p).sort()) out.set(name, fs.readFileSync(path.join(p, name)));
  return out;
}

/** `skip`: names ending so are left out (snapshots and the time index's closing entries depend on when the log was closed). */
export function expectSameFiles(a: string, b: string, skip: string[] = []): void {
  const pick = (m: Map<string, Buffer>): Map<string, Buffer> => new Map([...m].filter(([name]) => !skip.some((s) => name.endsWith(s))));
  const fa = pick(partitionFiles(a));
  const fb = pick(partitionFiles(b));
  expect([...fb.keys()]).to.deep.equal([...fa.keys()]);
  for (const [name, buf] of fa) expect(fb.get(name)?.equals(buf), `${name} differs`).to.equal(true);
}

/** The state a follower must share with its leader, beyond the files. */
export function replicaState(log: PartitionLog): object {
  return {
    logStartOffset: log.logStartOffset,
    logEndOffset: log.logEndOffset,
    latestEpoch: log.latestEpoch,
    segments: log.segmentBaseOffsets,
    producers: [...log.producers.producers.values()],
    firstUnstable: log.producers.firstUnstableOffset(),
    aborted: log.abortedTransactions(log.logStartOffset, log.logEndOffset),
  };
}

/** A copy of the partition directory as it is on disk now (what a kill -9 would leave). */
export function crashCopy(dir: string, to: string): void {
  fs.cpSync(path.join(dir, 'topic-0'), path.join(to, 'topic-0'), { recursive: true });
}

export async function reopen(log: PartitionLog, dir: string, over: Partial<LogConfig>): Promise<PartitionLog> {
  await log.close();
  return openLog(dir, over);
}
