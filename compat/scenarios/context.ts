/** What a scenario gets from the runner, and helpers several scenarios share. */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ControlRecordType, logEntries, readControlRecordKey } from '../../protocol/records/index.js';
import { type ApiRange, partitionReplicas, rawFetchBytes, rawRequest } from '../lib/raw.js';
import type { Client, OpName } from '../lib/types.js';

export interface BrokerTarget {
  bootstrap: string;
  /** set when the suite started this broker (gregor): its log files can be read directly */
  dataDir?: string;
  /** set when the suite started a cluster: each broker's node id and data dir (every replica's log files can be read) */
  nodes?: { nodeId: number; dataDir: string }[];
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

/** The entries stored for a partition: `replicas` is the number of replicas whose log files were read (0: fetched). */
export type StoredLog = StoredEntry[] & { replicas: number };

/**
 * The entries stored for a partition: read from the log files when the suite owns a single broker; in
 * a cluster the suite started, fetched from the leader (up to the high watermark) and compared with
 * the log files of every replica, each of which must hold the same entries below that offset (a
 * follower gets 10 s to catch up); else fetched raw with Fetch v4 (which returns stored bytes without
 * conversion).
 */
export async function storedEntries(target: BrokerTarget, topic: string, partition: number): Promise<StoredLog> {
  if (target.dataDir !== undefined) return Object.assign(parseEntries(logFiles(target.dataDir, topic, partition)), { replicas: 1 });
  const fetched = parseEntries(await rawFetchBytes(target.bootstrap, topic, partition));
  const nodes = target.nodes;
  if (nodes === undefined) return Object.assign(fetched, { replicas: 0 });
  const last = fetched[fetched.length - 1];
  const end = last === undefined ? 0 : last.offset + last.count;
  const want = fetched.map((e) => JSON.stringify(e));
  const replicas = await partitionReplicas(target.bootstrap, topic, partition);
  for (const nodeId of replicas) {
    const node = nodes.find((n) => n.nodeId === nodeId);
    if (node === undefined) throw new Error(`${topic}-${partition}: replica ${nodeId} is not a broker the suite started`);
    let have: string[] = [];
    const same = () => {
      have = parseEntries(logFiles(node.dataDir, topic, partition))
        .filter((e) => e.offset < end)
        .map((e) => JSON.stringify(e));
      return Promise.resolve(have.join() === want.join());
    };
    await eventually(`${topic}-${partition}`, same).catch(() => {
      throw new Error(
        `${topic}-${partition}: the log files of replica ${nodeId} hold [${have.join(', ')}] below offset ${end}, the leader served [${want.join(', ')}]`,
      );
    });
  }
  return Object.assign(fetched, { replicas: replicas.length });
}

/** ", identical on N replicas" for a log compared across replicas, else "". */
export const replicaNote = (log: StoredLog): string => (log.replicas > 1 ? `, identical on ${log.replicas} replicas` : '');

/** The concatenated .log files of a partition in a broker's data dir (empty when the partition has none there yet). */
function logFiles(dataDir: string, topic: string, partition: number): Buffer {
  const dir = join(dataDir, `${topic}-${partition}`);
  if (!existsSync(dir)) return Buffer.alloc(0);
  return Buffer.concat(
    readdirSync(dir)
      .filter((f) => f.endsWith('.log'))
      .sort()
      .map((f) => readFileSync(join(dir, f))),
  );
}

function parseEntries(buf: Buffer): StoredEntry[] {
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
    // zero padding (or a batch still being written) after the last entry ends the walk
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
