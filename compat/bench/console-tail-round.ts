/**
 * The broker CPU of one live-tail round (issue 19), in-process, so that a busy machine stretches the
 * wall time but hardly the figure: an embedded broker, a 4-partition topic whose partitions end in
 * batches of 1,000 records of 1 KB (librdkafka's batches at full rate), and TAIL_ROUNDS (default
 * 300) rounds from 50 records behind each high watermark (a busy round: 200 records sent), in
 * TAIL_BLOCKS (default 5) blocks; the median block's CPU (process.cpuUsage) per round.
 *
 *   npm run build && node dist/compat/bench/console-tail-round.js
 *
 * CONSOLE_ROOT=<another checkout> measures that checkout's build (its dist/); a build without
 * tailRound (before the cut) is measured with the round it had: every record of the batch decoded
 * with CRC checks, toJson per record, the events joined into one string.
 * Writes compat/results/console-tail-round-<ISO timestamp>.json.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../lib/paths.js';
import { loadAverage, median, writeResult } from './eos-common.js';
import { envInt, round } from './proc-stats.js';

/* The modules are loaded from CONSOLE_ROOT's dist/ with import(): typed by what is used. */
interface Rec {
  offset: bigint;
}
interface Read {
  partition: number;
  records: Rec[];
  highWatermark: bigint;
}
interface Kafka {
  call(handler: unknown, version: number, req: unknown): Promise<{ responses: { partitionResponses: { errorCode: number }[] }[] }>;
}
type Logs = readonly ({ highWatermark: bigint } | undefined)[];

async function main(): Promise<void> {
  const root = process.env['CONSOLE_ROOT'] ?? ROOT;
  const rounds = envInt('TAIL_ROUNDS', 300);
  const blocks = envInt('TAIL_BLOCKS', 5);
  const load = async <T>(path: string) => (await import(join(root, 'dist', path))) as T;
  const { startBroker } = await load<{
    startBroker: (o: object) => Promise<{ services: { topics: { logsOf(t: string): Logs | undefined } }; stop(): Promise<void> }>;
  }>('lib/index.js');
  const { inprocConnection } = await load<{ inprocConnection: (s: unknown, l: string) => Kafka }>('lib/console/inproc.js');
  const records = await load<{
    fetchRecords(k: Kafka, t: string, p: Map<number, bigint>, o: object): Promise<Read[]>;
    showRecord(r: Rec): unknown;
  }>('lib/console/records.js');
  const tailMod = await load<{
    tailRound?: (k: Kafka, t: string, l: Logs, p: Map<number, bigint>, s: object) => Promise<{ events: Buffer }>;
  }>('lib/console/tail.js');
  const { toJson } = await load<{ toJson: (v: unknown) => string }>('lib/console/http.js');
  const { buildRecordBatch } = await load<{ buildRecordBatch: (r: object[], o?: object) => Buffer }>('protocol/records/index.js');
  const { produceHandler } = await load<{ produceHandler: unknown }>('lib/handlers/produce.js');
  const { createTopicsHandler } = await load<{ createTopicsHandler: unknown }>('lib/handlers/create-topics.js');

  const dataDir = mkdtempSync(join(tmpdir(), 'gregor-tail-round-'));
  const broker = await startBroker({ port: 0, dataDir });
  try {
    const kafka = inprocConnection(broker.services, 'PLAINTEXT');
    await kafka.call(createTopicsHandler, 5, {
      topics: [{ name: 't', numPartitions: 4, replicationFactor: 1, assignments: [], configs: [] }],
      timeoutMs: 10_000,
      validateOnly: false,
    });
    const value = Buffer.from(Array.from({ length: 1024 }, () => 65 + Math.floor(Math.random() * 26)));
    for (let b = 0; b < 5; b++)
      for (let p = 0; p < 4; p++) {
        const batch = buildRecordBatch(
          Array.from({ length: 1000 }, () => ({ key: null, value, timestamp: BigInt(Date.now()), headers: [] })),
        );
        const res = await kafka.call(produceHandler, 9, {
          transactionalId: null,
          acks: 1,
          timeoutMs: 30_000,
          topicData: [{ name: 't', partitionData: [{ index: p, records: batch }] }],
        });
        if (res.responses[0]?.partitionResponses[0]?.errorCode !== 0) throw new Error('produce failed');
      }
    const logs = broker.services.topics.logsOf('t') ?? [];
    const sel = { q: '', filter: null };
    const behind = () => new Map([0, 1, 2, 3].map((p) => [p, (logs[p]?.highWatermark ?? 0n) - 50n]));
    // the round before the cut (a build without tailRound)
    const before = async (): Promise<Buffer> => {
      const positions = behind();
      const reads = await records.fetchRecords(kafka, 't', positions, { maxWaitMs: 2000, partitionMaxBytes: 1 << 20 });
      const out: string[] = [];
      for (const r of reads) {
        const pos = positions.get(r.partition) ?? 0n;
        for (const rec of r.records.filter((x) => x.offset >= pos && x.offset < r.highWatermark).slice(-50))
          out.push(`event: record\ndata: ${toJson(records.showRecord(rec))}\n\n`);
      }
      return Buffer.from(out.join(''));
    };
    const tailRound = tailMod.tailRound;
    const once = tailRound !== undefined ? async () => (await tailRound(kafka, 't', logs, behind(), sel)).events : before;
    let bytes = 0;
    for (let i = 0; i < 30; i++) bytes = (await once()).length; // warm-up
    const perRound: number[] = [];
    for (let b = 0; b < blocks; b++) {
      const c0 = process.cpuUsage();
      for (let i = 0; i < rounds; i++) await once();
      const c = process.cpuUsage(c0);
      perRound.push(round((c.user + c.system) / 1000 / rounds, 3));
    }
    const result = {
      id: 'console-tail-round',
      build: process.env['TAIL_BUILD'] ?? root,
      round: tailRound !== undefined ? 'tailRound' : 'before the cut (no tailRound in this build)',
      settings: { partitions: 4, batchRecords: 1000, valueBytes: 1024, behind: 50, rounds, blocks },
      bytesPerRound: bytes,
      cpuMsPerRound: { median: median(perRound), blocks: perRound },
      loadAverage: loadAverage(),
      node: process.version,
    };
    console.log(
      `${result.round}: ${result.cpuMsPerRound.median} ms CPU per round (blocks ${perRound.join(', ')}), ${bytes} B, load ${loadAverage().join(' ')}`,
    );
    console.log(`results in ${writeResult('console-tail-round', new Date().toISOString(), result)}`);
  } finally {
    await broker.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
