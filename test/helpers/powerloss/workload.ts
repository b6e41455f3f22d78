/**
 * The journaled workload of the power-loss tests: a gregor child process with fs-journal-preload.ts
 * loaded writes its data dir while kafkajs creates a topic, produces records one at a time (acks=-1)
 * and commits a group's offsets, each acknowledgement marked in the journal as the client sees it;
 * then the broker is killed (-9). What a power loss at any journal entry would leave is then built
 * by crash-image.ts and checked by check-image.ts.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Kafka, logLevel } from 'kafkajs';
import { startChildBroker } from '../broker.js';
import { RawClient } from '../raw-client.js';
import { offsetCommit } from '../txn-raw.js';
import { PROJECT_ROOT } from '../project.js';
import { makeTempDir } from '../temp-dirs.js';
import { markJournal, readJournal, type JournalEntry } from './crash-image.js';

export const PL_TOPIC = 'pl';
export const PL_GROUP = 'pl-group';

/** The value of the record at `offset` (each produced alone, so offset i holds value i). */
export const plValue = (offset: number): string => `pl-value-${String(offset).padStart(6, '0')}-${'x'.repeat(offset % 7)}`;

export type Durability = 'always' | 'interval1' | 'default';

/** Broker config of a workload: small segments and index interval, so rolls and index writes happen often. */
export function workloadConfig(durability: Durability): Record<string, string> {
  return {
    'log.segment.bytes': '1500',
    'log.index.interval.bytes': '200',
    'offsets.topic.num.partitions': '1',
    'auto.create.topics.enable': 'false',
    'log.flush.offset.checkpoint.interval.ms': '500',
    'group.initial.rebalance.delay.ms': '0',
    ...(durability === 'always' ? { 'log.flush.policy': 'always' } : {}),
    ...(durability === 'interval1' ? { 'log.flush.interval.messages': '1' } : {}),
  };
}

export interface Workload {
  durability: Durability;
  journal: JournalEntry[];
  config: Record<string, string>;
}

export async function runWorkload(durability: Durability, records: number, commitEvery: number): Promise<Workload> {
  const work = makeTempDir('gregor-powerloss-');
  const dataDir = path.join(work, 'data');
  const journal = path.join(work, 'journal.jsonl');
  const preload = pathToFileURL(path.join(PROJECT_ROOT, 'dist/test/helpers/powerloss/fs-journal-preload.js')).href;
  mkdirSync(dataDir);
  const config = workloadConfig(durability);
  const b = await startChildBroker(dataDir, 0, config, {
    NODE_OPTIONS: `--import=${preload}`,
    GREGOR_FS_JOURNAL: journal,
    GREGOR_FS_JOURNAL_ROOT: dataDir,
    LOG_LEVEL: 'warn',
  });
  const kafka = new Kafka({ brokers: [b.bootstrap], clientId: 'powerloss', logLevel: logLevel.NOTHING, retry: { retries: 0 } });
  const admin = kafka.admin();
  const producer = kafka.producer({ allowAutoTopicCreation: false, maxInFlightRequests: 1 });
  let raw: RawClient | null = null;
  try {
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: PL_TOPIC, numPartitions: 1 }], waitForLeaders: true });
    markJournal(journal, { op: 'created', topic: PL_TOPIC });
    await producer.connect();
    raw = await RawClient.connect(b.bootstrap);
    for (let i = 0; i < records; i++) {
      const [meta] = await producer.send({ topic: PL_TOPIC, acks: -1, messages: [{ value: plValue(i) }] });
      const offset = Number(meta?.baseOffset ?? -1);
      if (offset !== i) throw new Error(`record ${i} got offset ${offset}`);
      markJournal(journal, { op: 'ack', offset });
      if ((i + 1) % commitEvery === 0) {
        // OffsetCommit as a group-less client does (kafkajs's admin.setOffsets joins the group: seconds per call)
        const err = await offsetCommit(raw, PL_GROUP, PL_TOPIC, 0, BigInt(i + 1));
        if (err !== 0) throw new Error(`OffsetCommit answered ${err}`);
        markJournal(journal, { op: 'commit', offset: i + 1 });
      }
    }
  } finally {
    raw?.destroy();
    await producer.disconnect().catch(() => undefined);
    await admin.disconnect().catch(() => undefined);
    b.child.kill('SIGKILL');
    await b.exited;
  }
  return { durability, journal: readJournal(journal), config };
}
