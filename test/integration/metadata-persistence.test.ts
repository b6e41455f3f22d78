/**
 * The local metadata store (lib/metadata/local-store.ts, `gregor-metadata.json` in the data dir,
 * written tmp → fsync → rename → fsync dir) across broker restarts on the same data dir:
 * - topics, partition counts (also grown by CreatePartitions), configs (set at creation and by
 *   AlterConfigs), topic ids and the cluster id survive a stop/start, a deleted topic stays deleted,
 *   and the records are still there; driven by kafkajs' admin and producer, ids read with raw Metadata v12;
 * - a torn `gregor-metadata.json.tmp` (a crash while writing) is ignored: the last complete file wins;
 * - a torn, empty or garbage `gregor-metadata.json`: the broker refuses to start with
 *   GREGOR_ERR_METADATA_CORRUPT (naming the file and what is wrong, one error log line; `gregor start`
 *   exits non-zero with it) and leaves the file and the partition directories as they were (restoring
 *   the file brings every topic back);
 * - a missing `gregor-metadata.json` next to partition directories: GREGOR_ERR_METADATA_MISSING, as
 *   Kafka refuses a log dir without meta.properties, rather than an empty broker beside unserved data;
 *   a data dir without partition directories still starts a new cluster.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { MetadataResponse } from '../../protocol/generated/metadata.js';
import { startBroker } from '../../lib/broker.js';
import { createLogger } from '../../lib/observability/logger.js';
import { startTestBroker, tempDir, type TestBroker } from '../helpers/broker.js';
import { PROJECT_ROOT } from '../helpers/project.js';
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
    const md = await raw.request<MetadataResponse>(ApiKey.Metadata, 12, {
      topics: null,
      allowAutoTopicCreation: false,
      includeTopicAuthorizedOperations: false,
    });
    const user = md.topics
      .filter((t) => !t.isInternal && !(t.name ?? '').startsWith('__'))
      .sort((a, b) => (a.name ?? '').localeCompare(b.name ?? ''));
    const topics: TopicView[] = [];
    for (const t of user) {
      const name = t.name ?? '';
      const described = await admin.describeConfigs({ resources: [{ type: ConfigResourceTypes.TOPIC, name }], includeSynonyms: false });
      const entries = described.resources[0]?.configEntries ?? [];
      const configs = Object.fromEntries(entries.filter((e) => !e.isDefault).map((e) => [e.configName, e.configValue]));
      const ends: bigint[] = [];
      for (const p of [...t.partitions].sort((a, b) => a.partitionIndex - b.partitionIndex))
        ends.push(await rawListOffset(raw, name, p.partitionIndex));
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

/** The error-level log lines, each as its message and JSON. */
function errorLines(lines: Record<string, unknown>[]): string[] {
  return lines.filter((l) => l['level'] === 'error' || l['level'] === 'fatal').map((l) => String(l['msg']) + JSON.stringify(l));
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
              {
                topic: 'persist-a',
                numPartitions: 3,
                configEntries: [
                  { name: 'retention.ms', value: '7200000' },
                  { name: 'max.message.bytes', value: '200000' },
                ],
              },
              { topic: 'persist-b', numPartitions: 1 },
              { topic: 'persist-gone', numPartitions: 2 },
            ],
          }),
        ).to.equal(true);
        await admin.createPartitions({ topicPartitions: [{ topic: 'persist-b', count: 4 }] });
        await admin.alterConfigs({
          validateOnly: false,
          resources: [
            { type: ConfigResourceTypes.TOPIC, name: 'persist-b', configEntries: [{ name: 'retention.bytes', value: '1048576' }] },
          ],
        });
        await admin.deleteTopics({ topics: ['persist-gone'] });
      } finally {
        await admin.disconnect();
      }
      const producer = kafka.producer({ allowAutoTopicCreation: false });
      await producer.connect();
      try {
        for (let p = 0; p < 3; p++)
          await producer.send({
            topic: 'persist-a',
            messages: Array.from({ length: p + 2 }, (_, i) => ({ partition: p, value: `a${p}-${i}` })),
          });
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
      expect(before.topics.map((t) => t.ends)).to.deep.equal([
        [2n, 3n, 4n],
        [0n, 0n, 0n, 1n],
      ]);
      for (const t of before.topics)
        expect(t.topicId)
          .to.match(/^[0-9a-f]{32}$/)
          .and.not.equal(ZERO_ID);
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
        expect(decodeRecords(p2.records ?? Buffer.alloc(0), { maxOutput: 1 << 20 }).records.map((r) => r.value?.toString())).to.deep.equal([
          'a2-0',
          'a2-1',
          'a2-2',
          'a2-3',
        ]);
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

  /** [what, how, what the refusal says is wrong] */
  const CORRUPTIONS: [string, (file: string) => void, RegExp][] = [
    ['truncated to half its size', (f) => truncateSync(f, Math.floor(readFileSync(f).length / 2)), /not valid JSON, torn or garbled/],
    ['empty', (f) => truncateSync(f, 0), /it is empty \(0 bytes\)/],
    ['overwritten with zero bytes', (f) => writeFileSync(f, Buffer.alloc(readFileSync(f).length, 0)), /it holds only zero bytes/],
    ['valid JSON without the topic list', (f) => writeFileSync(f, '{"version":1}'), /no clusterId/],
    [
      'valid JSON, topic list missing',
      (f) => writeFileSync(f, JSON.stringify({ ...(JSON.parse(readFileSync(f, 'utf8')) as object), topics: undefined })),
      /no topic list/,
    ],
    [
      'valid JSON, a topic without its id',
      (f) => {
        const state = JSON.parse(readFileSync(f, 'utf8')) as { topics: Record<string, unknown>[] };
        delete state.topics[0]?.['topicId'];
        writeFileSync(f, JSON.stringify(state));
      },
      /topic persist-a has an invalid topicId undefined/,
    ],
    ['a JSON array', (f) => writeFileSync(f, '[]'), /expected a JSON object, got an array/],
  ];
  for (const [what, corrupt, says] of CORRUPTIONS) {
    it(`gregor-metadata.json ${what}: the broker refuses to start and touches nothing; restoring the file restores every topic`, async () => {
      const { dataDir, before } = await populated();
      const file = join(dataDir, METADATA_FILE);
      const good = `${file}.good-copy`;
      copyFileSync(file, good);
      corrupt(file);
      const torn = readFileSync(file);
      const partitionDirs = readdirSync(dataDir)
        .filter((d) => /^persist-[ab]-\d+$/.test(d))
        .sort();
      // (partitions never written to may have no directory yet)
      expect(partitionDirs).to.include.members(['persist-a-0', 'persist-a-1', 'persist-a-2', 'persist-b-3']);
      const { err, lines } = await refusedStart(dataDir);
      expect(err).to.be.instanceOf(Error);
      expect(err.message)
        .to.match(/^GREGOR_ERR_METADATA_CORRUPT: /)
        .and.include(file)
        .and.match(says);
      expect(errorLines(lines)).to.have.length(1);
      // nothing was rewritten or removed by the failed start
      expect(readFileSync(file).equals(torn), 'metadata file unchanged').to.equal(true);
      expect(
        readdirSync(dataDir)
          .filter((d) => /^persist-[ab]-\d+$/.test(d))
          .sort(),
      ).to.deep.equal(partitionDirs);
      copyFileSync(good, file);
      rmSync(good);
      b = await startTestBroker({ 'auto.create.topics.enable': false }, { dataDir });
      expect(await snapshot(b.bootstrap)).to.deep.equal(before);
    });
  }

  it('the refusal on a torn metadata file carries a GREGOR_ERR_* code naming the file, and logs it', async () => {
    const { dataDir } = await populated();
    truncateSync(join(dataDir, METADATA_FILE), 10);
    const { err, lines } = await refusedStart(dataDir);
    expect(err.message).to.match(/^GREGOR_ERR_[A-Z_]+: /);
    expect(err.message).to.include(METADATA_FILE);
    expect(errorLines(lines)).to.satisfy((ls: string[]) => ls.some((l) => l.includes('GREGOR_ERR_')));
    // exactly one line, carrying the code and the file as fields too
    expect(errorLines(lines)).to.have.length(1);
    const line = lines.find((l) => l['level'] === 'error');
    expect([line?.['code'], line?.['file'], line?.['msg']]).to.deep.equal([
      'GREGOR_ERR_METADATA_CORRUPT',
      join(dataDir, METADATA_FILE),
      err.message,
    ]);
  });

  it('`gregor start` on a torn metadata file exits non-zero with the GREGOR_ERR_* message', async () => {
    const { dataDir } = await populated();
    writeFileSync(join(dataDir, METADATA_FILE), '{"version":1,"clus');
    const r = spawnSync(process.execPath, [join(PROJECT_ROOT, 'bin/gregor.js'), 'start', '--data-dir', dataDir, '--port', '0'], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(r.status, r.stderr).to.be.a('number').and.not.equal(0);
    expect(r.stderr + r.stdout).to.include(
      `GREGOR_ERR_METADATA_CORRUPT: metadata file ${join(dataDir, METADATA_FILE)} is unreadable: not valid JSON`,
    );
    expect(r.stdout).to.not.match(/^GREGOR_READY /m);
  });

  it('a missing gregor-metadata.json next to partition directories does not start an empty broker', async () => {
    // Kafka refuses to start on a log dir without its metadata (meta.properties) rather than serve it as empty.
    const { dataDir, before } = await populated();
    const file = join(dataDir, METADATA_FILE);
    const kept = `${file}.kept`;
    renameSync(file, kept);
    const entries = readdirSync(dataDir).sort();
    const { err, lines } = await refusedStart(dataDir);
    expect(err.message).to.match(/^GREGOR_ERR_METADATA_MISSING: /);
    expect(err.message).to.include(`data dir ${dataDir} `);
    expect(err.message).to.include(METADATA_FILE);
    // the orphan partition directories, a few by name
    expect(err.message).to.include('persist-a-0').and.include('persist-a-1');
    // how to proceed
    expect(err.message).to.match(
      /Restore .*gregor-metadata\.json.* or, to start a new cluster here, move the partition directories out of/,
    );
    expect(errorLines(lines)).to.have.length(1);
    expect(errorLines(lines)[0]).to.include('GREGOR_ERR_METADATA_MISSING');
    // nothing was created or removed: no new (empty) metadata file
    expect(readdirSync(dataDir).sort()).to.deep.equal(entries);
    expect(existsSync(file)).to.equal(false);
    // restoring the file brings every topic back
    renameSync(kept, file);
    b = await startTestBroker({ 'auto.create.topics.enable': false }, { dataDir });
    expect(await snapshot(b.bootstrap)).to.deep.equal(before);
  });

  it('a data dir with no partition directories (only other files) still starts a new cluster', async () => {
    const dataDir = tempDir('gregor-md-fresh-');
    dirs.push(dataDir);
    writeFileSync(join(dataDir, 'README'), 'not a partition');
    writeFileSync(join(dataDir, 'orders-0'), 'a file, not a partition directory');
    mkdirSync(join(dataDir, 'not-a-partition'));
    b = await startTestBroker({ 'auto.create.topics.enable': false }, { dataDir });
    expect((await snapshot(b.bootstrap)).topics).to.deep.equal([]);
    expect(() => JSON.parse(readFileSync(join(dataDir, METADATA_FILE), 'utf8'))).to.not.throw();
  });
});
