/** What a scenario gets from the runner, and helpers several scenarios share. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ControlRecordType, logEntries, readControlRecordKey } from '../../protocol/records/index.js';
import { type ApiRange, rawFetchBytes, rawRequest } from '../lib/raw.js';
import type { Client, OpName } from '../lib/types.js';

export interface BrokerTarget {
  bootstrap: string;
  /** set when the suite started this broker (gregor): its log files can be read directly */
  dataDir?: string;
  apis: ApiRange[];
}

export interface ScenarioContext {
  /** the broker under test */
  main: BrokerTarget;
  /** a gregor with broker.version.emulate=0.10.0; absent with --bootstrap */
  legacy?: BrokerTarget;
  /** a topic name unique to this cell */
  topic(name: string): string;
}

export interface Scenario {
  id: string;
  title: string;
  /** what is checked, for the report */
  description: string;
  /** client operations needed; a missing one makes the cell "not supported by client" */
  ops: OpName[];
  /** API keys the broker must advertise; otherwise "not implemented by broker" */
  brokerApis?: number[];
  /** part of the smoke subset inside npm test */
  smoke?: boolean;
  /** runs the scenario; returns a line describing what passed; throws on failure */
  run(ctx: ScenarioContext, client: Client): Promise<string>;
}

/** Thrown when a scenario needs a broker the suite did not start (the --bootstrap mode). */
export class NeedsGregorError extends Error {}

export interface StoredEntry {
  magic: number;
  compression: number;
  count: number;
  /** first offset of the entry (v2: baseOffset; magic 0/1: the message's offset) */
  offset: number;
  /** v2 only: producer id (-1 without one), epoch, base sequence, the transactional and control flags */
  producerId?: number;
  producerEpoch?: number;
  baseSequence?: number;
  transactional?: boolean;
  /** for a control batch: 'ABORT', 'COMMIT' or the control type number */
  control?: string;
}

/**
 * The entries stored for a partition: read from the log files when the suite owns the broker, else
 * fetched raw with Fetch v4 (which returns stored bytes without conversion).
 */
export async function storedEntries(target: BrokerTarget, topic: string, partition: number): Promise<StoredEntry[]> {
  let buf: Buffer;
  if (target.dataDir !== undefined) {
    const dir = join(target.dataDir, `${topic}-${partition}`);
    buf = Buffer.concat(
      readdirSync(dir)
        .filter((f) => f.endsWith('.log'))
        .sort()
        .map((f) => readFileSync(join(dir, f))),
    );
  } else {
    buf = await rawFetchBytes(target.bootstrap, topic, partition);
  }
  const out: StoredEntry[] = [];
  try {
    for (const e of logEntries(buf)) {
      if (e.kind === 'batch') {
        const b = e.batch;
        const entry: StoredEntry = {
          magic: 2,
          compression: b.compression,
          count: b.recordCount,
          offset: Number(b.baseOffset),
          producerId: Number(b.producerId),
          producerEpoch: b.producerEpoch,
          baseSequence: b.baseSequence,
          transactional: b.isTransactional,
        };
        if (b.isControl) {
          const type = readControlRecordKey(b.records({ maxOutput: 1 << 20 })[0]?.key ?? null).type;
          entry.control = type === ControlRecordType.ABORT ? 'ABORT' : type === ControlRecordType.COMMIT ? 'COMMIT' : String(type);
        }
        out.push(entry);
      } else if (e.kind === 'message')
        out.push({ magic: e.message.magic, compression: e.message.compression, count: 1, offset: Number(e.message.offset) });
      else break;
    }
  } catch {
    // zero padding after the last entry ends the walk
  }
  return out;
}

/** Partition count of `topic` via Metadata v4 without auto-creation; -1 when it does not exist. */
export async function partitionCount(bootstrap: string, topic: string): Promise<number> {
  const md = await rawRequest<{ topics: { name: string; errorCode: number; partitions: unknown[] }[] }>(bootstrap, 3, 4, {
    topics: [{ name: topic }],
    allowAutoTopicCreation: false,
  });
  const t = md.topics.find((x) => x.name === topic);
  return t === undefined || t.errorCode !== 0 ? -1 : t.partitions.length;
}

export async function eventually(what: string, cond: () => Promise<boolean>, timeoutMs = 10000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`${what} (waited ${timeoutMs} ms)`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export const CODEC_ID: Record<string, number> = { none: 0, gzip: 1, snappy: 2, lz4: 3, zstd: 4 };
export const API = {
  Produce: 0,
  FindCoordinator: 10,
  JoinGroup: 11,
  Heartbeat: 12,
  LeaveGroup: 13,
  SyncGroup: 14,
  OffsetCommit: 8,
  OffsetFetch: 9,
  InitProducerId: 22,
  AddPartitionsToTxn: 24,
  EndTxn: 26,
  ConsumerGroupHeartbeat: 68,
} as const;
