/**
 * The local metadata store (lib/metadata/local-store.ts, `gregor-metadata.json` in the data dir,
 * written tmp → fsync → rename → fsync dir) across broker restarts on the same data dir:
 * - topics, partition counts (also grown by CreatePartitions), configs (set at creation and by
 *   AlterConfigs), topic ids and the cluster id survive a stop/start, a deleted topic stays deleted,
 *   and the records are still there; driven by kafkajs' admin and producer, ids read with raw Metadata v12;
 * - a torn `gregor-metadata.json.tmp` (a crash while writing) is ignored: the last complete file wins;
 * - a torn, empty or garbage `gregor-metadata.json`: the broker refuses to start and leaves the file
 *   and the partition directories as they were (restoring the file brings every topic back).
 * Two gaps are recorded as skipped tests (see the comments there): the refusal has no GREGOR_ERR_*
 * code nor log line, and a missing metadata file next to partition directories starts an empty broker.
 */
import { expect } from 'chai';
import { copyFileSync, existsSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { MetadataResponse } from '../../protocol/generated/metadata.js';
import { startBroker } from '../../lib/broker.js';
import { createLogger } from '../../lib/observability/logger.js';
import { startTestBroker, tempDir, type TestBroker } from '../helpers/broker.js';
import { RawClient, rawFetch, rawListOffset } from '../helpers/raw-client.js';
import { decodeRecords } from '../../protocol/records/index.js';

const require = createRequire(import.meta.url);
const { Kafka, logLevel, ConfigResourceTypes } = require('kafkajs') as typeof import('kafkajs');

const METADATA_FILE = 'gregor-metadata.json';
const ZERO_ID = '0'.repeat(32);

interface TopicView {
  name: string;
  topicId: string;
  partitions: number;
  configs: Record<string, string>;
  ends: bigint[];
}

interface Snapshot {
  clusterId: string | null;
  topics: TopicView[];
}

/** Everything a client sees of the user topics: ids and partitions (Metadata v12), non-default configs (kafkajs), end offsets. */
async function snapshot(bootstrap: string): Promise<Snapshot> {
  const raw = await RawClient.connect(bootstrap);
  const admin = new Kafka({ brokers: [bootstrap], clientId: 'md-persist', logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    const md = await raw.request<MetadataResponse>(ApiKey.Metadata, 12, { topics: null, allowAutoTopicCreation: false, includeTopicAuthorizedOperations: false });
    const user = md.topics.filter((t) => !t.isInternal && !(t.name ?? '').startsWith('__')).sort((a, b) => (a.name ?? '').localeCompare(b.name ?? ''));
    const topics: TopicView[] = [];
    for (const t of user) {
      const name = t.name ?? '';
      const described = await admin.describeConfigs({ resources: [{ type: ConfigResourceTypes.TOPIC, name }], includeSynonyms: false });
      const entries = described.resources[0]?.configEntries ?? [];
      const configs = Object.fromEntries(entries.filter((e) => !e.isDefault).map((e) => [e.configName, e.configValue]));
      const ends: bigint[] = [];
      for (const p of [...t.partitions].sort((a, b) => a.partitionIndex - b.partitionIndex)) ends.push(await rawListOffset(raw, name, p.partitionIndex));
      topics.push({ name, topicId: t.topicId ?? ZERO_ID, partitions: t.partitions.length, configs, ends });
    }
    return { clusterId: md.clusterId ?? null, topics };
  } finally {
    await admin.disconnect();
    raw.destroy();
  }
}

/** A logger whose JSON lines are kept. */
function capturingLogger(): { logger: ReturnType<typeof createLogger>; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString('utf8').split('\n')) if (l.trim() !== '') lines.push(JSON.parse(l) as Record<string, unknown>);
      cb();
    },
  });
  return { logger: createLogger({ level: 'info', destination }), lines };
}

/** Starts a broker on `dataDir` expecting it to refuse; resolves with the error and the log lines. */
async function refusedStart(dataDir: string): Promise<{ err: Error; lines: Record<string, unknown>[] }> {
  const { logger, lines } = capturingLogger();
  try {
    const b = await startBroker({ port: 0, dataDir, logger });
    await b.stop();
  } catch (e) {
    return { err: e as Error, lines };
  }
  throw new Error(`the broker started on ${dataDir}`);
}

/** What a broker must do on a data dir whose metadata is gone: refuse with a GREGOR_ERR_* code, or serve the topics it had. */
async function expectRefusedOrRecovered(dataDir: string, before: Snapshot): Promise<void> {
  const { logger } = capturingLogger();
  const started = await startBroker({ port: 0, dataDir, logger }).catch((e: unknown) => {
    expect((e as Error).message).to.match(/^GREGOR_ERR_[A-Z_]+: /);
    return null;
  });
  if (started === null) return;
  try {
    expect((await snapshot(started.bootstrapServers)).topics.map((t) => t.name)).to.deep.equal(before.topics.map((t) => t.name));
  } finally {
    await started.stop();
  }
}

describe('metadata persistence across restarts (local store)', function () {
  this.timeout(60_000);
  const dirs: string[] = [];
  let b: TestBroker | undefined;

  afterEach(async () => {
    await b?.stop();
    b = undefined;
  });
  after(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  /** A data dir holding three topics (one grown, one with altered configs, one deleted) and some records; the broker is stopped. */
  async function populated(): Promise<{ dataDir: string; before: Snapshot }> {
    const dataDir = tempDir('gregor-md-persist-');
    dirs.push(dataDir);
    const first = await startTestBroker({ 'auto.create.topics.enable': false }, { dataDir });
    try {
      const kafka = new Kafka({ brokers: [first.bootstrap], clientId: 'md-persist', logLevel: logLevel.NOTHING });
      const admin = kafka.admin();
      await admin.connect();
      try {
        expect(
          await admin.createTopics({
            waitForLeaders: true,
            topics: [
              { topic: 'persist-a', numPartitions: 3, configEntries: [{ name: 'retention.ms', value: '7200000' }, { name: 'max.message.bytes', value: '200000' }] },
              { topic: 'persist-b', numPartitions: 1 },
              { topic: 'persist-gone', numPartitions: 2 },
            ],
          }),
        ).to.equal(true);
        await admin.createPartitions({ topicPartitions: [{ topic: 'persist-b', count: 4 }] });
        await admin.alterConfigs({ validateOnly: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: 'persist-b', configEntries: [{ name: 'retention.bytes', value: '1048576' }] }] });
        await admin.deleteTopics({ topics: ['persist-gone'] });
      } finally {
        await admin.disconnect();
      }
      const producer = kafka.producer({ allowAutoTopicCreation: false });
      await producer.connect();
      try {
        for (let p = 0; p < 3; p++) await producer.send({ topic: 'persist-a', messages: Array.from({ length: p + 2 }, (_, i) => ({ partition: p, value: `a${p}-${i}` })) });
        await producer.send({ topic: 'persist-b', messages: [{ partition: 3, value: 'b3-0' }] });
      } finally {
        await producer.disconnect();
      }
      const before = await snapshot(first.bootstrap);
      expect(before.topics.map((t) => [t.name, t.partitions])).to.deep.equal([
        ['persist-a', 3],
        ['persist-b', 4],
      ]);
      expect(before.topics[0]?.configs).to.deep.equal({ 'retention.ms': '7200000', 'max.message.bytes': '200000' });
      expect(before.topics[1]?.configs).to.deep.equal({ 'retention.bytes': '1048576' });
      expect(before.topics.map((t) => t.ends)).to.deep.equal([[2n, 3n, 4n], [0n, 0n, 0n, 1n]]);
      for (const t of before.topics) expect(t.topicId).to.match(/^[0-9a-f]{32}$/).and.not.equal(ZERO_ID);
      return { dataDir, before };
    } finally {
      await first.stop();
    }
  }

  it('topics, partition counts, configs, topic ids, the cluster id and the records survive a stop/start', async () => {
    const { dataDir, before } = await populated();
    for (let restart = 1; restart <= 2; restart++) {
      b = await startTestBroker({ 'auto.create.topics.enable': false }, { dataDir });
      expect(await snapshot(b.bootstrap), `after restart ${restart}`).to.deep.equal(before);
      const raw = await RawClient.connect(b.bootstrap);
      try {
        const p2 = await rawFetch(raw, 'persist-a', 2, 0n);
        expect(decodeRecords(p2.records ?? Buffer.alloc(0), { maxOutput: 1 << 20 }).records.map((r) => r.value?.toString())).to.deep.equal(['a2-0', 'a2-1', 'a2-2', 'a2-3']);
      } finally {
        raw.destroy();
      }
      await b.stop();
      b = undefined;
    }
  });

  it('a torn gregor-metadata.json.tmp (crash while writing) is ignored: the last complete file is loaded', async () => {
    const { dataDir, before } = await populated();
    writeFileSync(join(dataDir, `${METADATA_FILE}.tmp`), '{"version":1,"clusterId":"torn-wr');
    b = await startTestBroker({ 'auto.create.topics.enable': false }, { dataDir });
    expect(await snapshot(b.bootstrap)).to.deep.equal(before);
    // the store rewrote its file on open: the tmp is gone, the file is complete JSON
    expect(existsSync(join(dataDir, `${METADATA_FILE}.tmp`))).to.equal(false);
    expect(() => JSON.parse(readFileSync(join(dataDir, METADATA_FILE), 'utf8'))).to.not.throw();
  });

  const CORRUPTIONS: [string, (file: string) => void][] = [
    ['truncated to half its size', (f) => truncateSync(f, Math.floor(readFileSync(f).length / 2))],
    ['empty', (f) => truncateSync(f, 0)],
    ['overwritten with zero bytes', (f) => writeFileSync(f, Buffer.alloc(readFileSync(f).length, 0))],
    ['valid JSON without the topic list', (f) => writeFileSync(f, '{"version":1}')],
  ];
  for (const [what, corrupt] of CORRUPTIONS) {
    it(`gregor-metadata.json ${what}: the broker refuses to start and touches nothing; restoring the file restores every topic`, async () => {
      const { dataDir, before } = await populated();
      const file = join(dataDir, METADATA_FILE);
      const good = `${file}.good-copy`;
      copyFileSync(file, good);
      corrupt(file);
      const torn = readFileSync(file);
      const partitionDirs = readdirSync(dataDir).filter((d) => /^persist-[ab]-\d+$/.test(d)).sort();
      // (partitions never written to may have no directory yet)
      expect(partitionDirs).to.include.members(['persist-a-0', 'persist-a-1', 'persist-a-2', 'persist-b-3']);
      const { err } = await refusedStart(dataDir);
      expect(err).to.be.instanceOf(Error);
      // nothing was rewritten or removed by the failed start
      expect(readFileSync(file).equals(torn), 'metadata file unchanged').to.equal(true);
      expect(readdirSync(dataDir).filter((d) => /^persist-[ab]-\d+$/.test(d)).sort()).to.deep.equal(partitionDirs);
      copyFileSync(good, file);
      rmSync(good);
      b = await startTestBroker({ 'auto.create.topics.enable': false }, { dataDir });
      expect(await snapshot(b.bootstrap)).to.deep.equal(before);
    });
  }

  it('the refusal on a torn metadata file carries a GREGOR_ERR_* code naming the file, and logs it [pending: broker gap, a bare JSON SyntaxError today]', async function () {
    // Skipped for a gap in lib/metadata/local-store.ts: a torn file makes LocalMetadataStore.open
    // rethrow JSON.parse's SyntaxError ("Unexpected end of JSON input"): no GREGOR_ERR_* code, no
    // file name, and no log line from the broker. The store is outside this test's scope; what the
    // design asks (a clear, stable code and one log line) is asserted below: drop the skip with the fix.
    this.skip();
    const { dataDir } = await populated();
    truncateSync(join(dataDir, METADATA_FILE), 10);
    const { err, lines } = await refusedStart(dataDir);
    expect(err.message).to.match(/^GREGOR_ERR_[A-Z_]+: /);
    expect(err.message).to.include(METADATA_FILE);
    expect(lines.filter((l) => l['level'] === 'error' || l['level'] === 'fatal').map((l) => String(l['msg']) + JSON.stringify(l))).to.satisfy((ls: string[]) => ls.some((l) => l.includes('GREGOR_ERR_')));
  });

  it('a missing gregor-metadata.json next to partition directories does not start an empty broker [pending: broker bug, it silently does]', async function () {
    // Skipped for a broker bug: with the metadata file deleted, LocalMetadataStore.open treats the data
    // dir as new (ENOENT) and the broker starts with no topics, while persist-a-0.. stay on disk
    // unserved: topics are lost silently. Kafka refuses to start on a log dir without its metadata
    // (meta.properties) rather than serve it as empty. Asserted below: refuse (or recover the topics).
    this.skip();
    const { dataDir, before } = await populated();
    rmSync(join(dataDir, METADATA_FILE));
    await expectRefusedOrRecovered(dataDir, before);
  });
});
