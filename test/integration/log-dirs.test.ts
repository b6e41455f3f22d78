/**
 * A broker on several log.dirs, driven over TCP: kafkajs creates topics, produces, consumes and
 * deletes them; DescribeLogDirs (no client here has it: kafkajs and kafka-python 2.0.2 lack it,
 * librdkafka has no such admin call) is sent raw in every version, and its v0 bytes are also parsed
 * by hand here, so the sizes are checked against the `.log` files on disk without the broker's codec.
 * - new partitions go to the dir with the fewest partitions (the first on a tie): 4 partitions on
 *   two dirs alternate; after a restart with a third, empty dir, that dir takes the next two;
 * - every dir gets meta.properties with the cluster and node id; a restart finds every partition;
 * - deletion removes the partition directories from whichever dir holds them;
 * - `gregor log-dirs --format json` prints the same replicas and sizes;
 * - the start is refused (GREGOR_ERR_*, `gregor start` exits non-zero) when a partition directory is
 *   in two dirs or a dir's meta.properties names another node.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { ApiVersionsResponse } from '../../protocol/generated/api-versions.js';
import type { DescribeLogDirsResponse } from '../../protocol/generated/describe-log-dirs.js';
import { startTestBroker, tempDir, type TestBroker } from '../helpers/broker.js';
import { cliOk } from '../helpers/cli.js';
import { PROJECT_ROOT } from '../helpers/project.js';
import { RawClient } from '../helpers/raw-client.js';

const require = createRequire(import.meta.url);
const { Kafka, logLevel } = require('kafkajs') as typeof import('kafkajs');

type Placement = Record<string, string[]>;

/** Which partition directories of `topics` each dir holds on disk (by dir name). */
function onDisk(dirs: string[], topics: string[]): Placement {
  const out: Placement = {};
  for (const d of dirs) {
    const names = existsSync(d) ? readdirSync(d) : [];
    out[d.slice(d.lastIndexOf('/') + 1)] = names.filter((n) => topics.some((t) => n.startsWith(`${t}-`) && /-\d+$/.test(n))).sort();
  }
  return out;
}

/** Bytes of the `.log` segment files of one partition directory. */
function segmentBytes(partitionDir: string): bigint {
  let n = 0n;
  for (const f of readdirSync(partitionDir)) if (f.endsWith('.log')) n += BigInt(statSync(join(partitionDir, f)).size);
  return n;
}

/** DescribeLogDirs v0, encoded and decoded by hand: [dir, topic, partition, size, offsetLag, isFuture][]. */
async function describeV0ByHand(raw: RawClient): Promise<[string, string, number, bigint, bigint, boolean][]> {
  const want = raw.responses.length + 1;
  // request header v1: apiKey, apiVersion, correlationId, clientId; body: topics = null (-1)
  const clientId = Buffer.from('by-hand');
  const head = Buffer.alloc(10);
  head.writeInt16BE(ApiKey.DescribeLogDirs, 0);
  head.writeInt16BE(0, 2);
  head.writeInt32BE(4242, 4);
  head.writeInt16BE(clientId.length, 8);
  const body = Buffer.alloc(4);
  body.writeInt32BE(-1, 0);
  const msg = Buffer.concat([head, clientId, body]);
  const size = Buffer.alloc(4);
  size.writeInt32BE(msg.length, 0);
  await raw.write(Buffer.concat([size, msg]));
  const frame = (await raw.waitResponses(want))[want - 1]!.frame;
  let at = 0;
  const i16 = () => ((at += 2), frame.readInt16BE(at - 2));
  const i32 = () => ((at += 4), frame.readInt32BE(at - 4));
  const i64 = () => ((at += 8), frame.readBigInt64BE(at - 8));
  const str = () => {
    const n = i16();
    at += n;
    return frame.toString('utf8', at - n, at);
  };
  expect(i32()).to.equal(4242); // correlation id
  i32(); // throttle
  const rows: [string, string, number, bigint, bigint, boolean][] = [];
  for (let r = i32(); r > 0; r--) {
    expect(i16()).to.equal(0);
    const dir = str();
    for (let t = i32(); t > 0; t--) {
      const topic = str();
      for (let p = i32(); p > 0; p--) {
        const partition = i32();
        const bytes = i64();
        const lag = i64();
        rows.push([dir, topic, partition, bytes, lag, frame.readInt8(at++) !== 0]);
      }
    }
  }
  expect(at).to.equal(frame.length);
  return rows;
}

describe('several log.dirs, and DescribeLogDirs', function () {
  this.timeout(90_000);
  let root: string;
  let b: TestBroker | undefined;
  let raw: RawClient | undefined;
  beforeEach(() => {
    root = tempDir('gregor-logdirs-');
  });
  afterEach(async () => {
    raw?.destroy();
    raw = undefined;
    await b?.stop();
    b = undefined;
    rmSync(root, { recursive: true, force: true });
  });

  const start = async (dirs: string[]): Promise<TestBroker> =>
    startTestBroker({ 'log.dirs': dirs.join(','), 'auto.create.topics.enable': false }, { dataDir: dirs[0] as string });

  async function produce(bootstrap: string, topic: string, partitions: number, perPartition: number): Promise<void> {
    const producer = new Kafka({ brokers: [bootstrap], clientId: 'logdirs', logLevel: logLevel.NOTHING }).producer();
    await producer.connect();
    try {
      for (let p = 0; p < partitions; p++) {
        const messages = Array.from({ length: perPartition }, (_, i) => ({
          partition: p,
          key: `k${i}`,
          value: `${topic}-${p}-${i}`.repeat(5),
        }));
        await producer.send({ topic, acks: -1, messages });
      }
    } finally {
      await producer.disconnect();
    }
  }

  async function consumeAll(bootstrap: string, topics: string[], expected: number): Promise<string[]> {
    const consumer = new Kafka({ brokers: [bootstrap], clientId: 'logdirs', logLevel: logLevel.NOTHING }).consumer({
      groupId: `g-${Date.now()}`,
    });
    const seen: string[] = [];
    await consumer.connect();
    try {
      for (const topic of topics) await consumer.subscribe({ topic, fromBeginning: true });
      await new Promise<void>((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`read ${seen.length} of ${expected} records`)), 60_000);
        void consumer.run({
          eachMessage: ({ message }) => {
            seen.push(message.value?.toString() ?? '');
            if (seen.length >= expected) {
              clearTimeout(t);
              resolve();
            }
            return Promise.resolve();
          },
        });
      });
    } finally {
      await consumer.disconnect();
    }
    return seen;
  }

  it('places partitions on the emptiest dir, describes them with their sizes on disk in every version, reloads them all and deletes them', async () => {
    const [a, bb, c] = ['a', 'b', 'c'].map((n) => join(root, n)) as [string, string, string];
    b = await start([a, bb]);
    const admin = new Kafka({ brokers: [b.bootstrap], clientId: 'logdirs', logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    expect(await admin.createTopics({ topics: [{ topic: 't', numPartitions: 4 }] })).to.equal(true);
    await admin.disconnect();
    await produce(b.bootstrap, 't', 4, 10);
    expect(onDisk([a, bb], ['t'])).to.deep.equal({ a: ['t-0', 't-2'], b: ['t-1', 't-3'] });
    const ids = [a, bb].map((d) => /^cluster\.id=(.+)$/m.exec(readFileSync(join(d, 'meta.properties'), 'utf8'))?.[1]);
    expect(ids[0]).to.be.a('string').and.equal(ids[1]);

    raw = await RawClient.connect(b.bootstrap);
    // DescribeLogDirs is offered in every version; AlterReplicaLogDirs (moving a replica between dirs) is not
    const versions = await raw.request<ApiVersionsResponse>(ApiKey.ApiVersions, 3, {
      clientSoftwareName: 'raw',
      clientSoftwareVersion: '1',
    });
    const offered = (key: number) => versions.apiKeys.filter((k) => k.apiKey === key).map((k) => [k.minVersion, k.maxVersion]);
    expect([offered(ApiKey.DescribeLogDirs), offered(ApiKey.AlterReplicaLogDirs)]).to.deep.equal([[[0, 4]], []]);
    const expectedRows = [a, bb].flatMap((d, i) =>
      [i, i + 2].map((p) => [d, 't', p, segmentBytes(join(d, `t-${p}`)), 0n, false] as [string, string, number, bigint, bigint, boolean]),
    );
    expect(expectedRows.every((r) => r[3] > 0n)).to.equal(true);
    expect(await describeV0ByHand(raw)).to.deep.equal(expectedRows);
    for (let v = 0; v <= 4; v++) {
      const res = await raw.request<DescribeLogDirsResponse>(ApiKey.DescribeLogDirs, v, { topics: null });
      expect(res.errorCode ?? 0, `v${v}`).to.equal(0);
      const rows = res.results.flatMap((r) =>
        r.topics.flatMap((t) => t.partitions.map((p) => [r.logDir, t.name, p.partitionIndex, p.partitionSize, p.offsetLag, p.isFutureKey])),
      );
      expect(rows, `v${v}`).to.deep.equal(expectedRows);
      for (const r of res.results) {
        if (v < 4) expect([r.totalBytes, r.usableBytes], `v${v}`).to.deep.equal([-1n, -1n]);
        else
          expect(
            r.totalBytes! > 0n && r.usableBytes! >= 0n && r.usableBytes! <= r.totalBytes!,
            `v4 ${r.totalBytes} ${r.usableBytes}`,
          ).to.equal(true);
      }
    }
    // the CLI (kafka-log-dirs' JSON shape): the same replicas and sizes
    type CliJson = {
      brokers: { logDirs: { logDir: string; error: unknown; partitions: { partition: string; size: number | string }[] }[] }[];
    };
    const cli = JSON.parse((await cliOk(['log-dirs', '--format', 'json', '-b', b.bootstrap, '--topic', 't'])).out) as CliJson;
    expect(
      cli.brokers.flatMap((x) => x.logDirs.flatMap((d) => d.partitions.map((p) => [d.logDir, d.error, p.partition, String(p.size)]))),
    ).to.deep.equal(expectedRows.map((r) => [r[0], null, `t-${r[2]}`, String(r[3])]));
    // a topic filter: only the partitions asked for that this broker holds; a topic left with none is left out
    const filtered = await raw.request<DescribeLogDirsResponse>(ApiKey.DescribeLogDirs, 4, {
      topics: [
        { topic: 't', partitions: [1, 9] },
        { topic: 'nope', partitions: [0] },
      ],
    });
    expect(
      filtered.results.map((r) => [r.logDir, r.errorCode, r.topics.map((t) => [t.name, t.partitions.map((p) => p.partitionIndex)])]),
    ).to.deep.equal([
      [a, 0, []],
      [bb, 0, [['t', [1]]]],
    ]);
    raw.destroy();
    raw = undefined;
    await b.stop();

    // a third, empty dir: it takes new partitions until it holds as many as the others
    b = await start([a, bb, c]);
    expect(readFileSync(join(c, 'meta.properties'), 'utf8')).to.include(`cluster.id=${ids[0]}`);
    const admin2 = new Kafka({ brokers: [b.bootstrap], clientId: 'logdirs', logLevel: logLevel.NOTHING }).admin();
    await admin2.connect();
    expect(await admin2.createTopics({ topics: [{ topic: 'n', numPartitions: 3 }] })).to.equal(true);
    await produce(b.bootstrap, 'n', 3, 2);
    expect(onDisk([a, bb, c], ['t', 'n'])).to.deep.equal({ a: ['n-2', 't-0', 't-2'], b: ['t-1', 't-3'], c: ['n-0', 'n-1'] });
    const seen = await consumeAll(b.bootstrap, ['t', 'n'], 46);
    expect(seen.length).to.equal(46);
    expect(new Set(seen).size).to.equal(46);

    await admin2.deleteTopics({ topics: ['t'] });
    await admin2.disconnect();
    expect(onDisk([a, bb, c], ['t'])).to.deep.equal({ a: [], b: [], c: [] });
    raw = await RawClient.connect(b.bootstrap);
    const after = await raw.request<DescribeLogDirsResponse>(ApiKey.DescribeLogDirs, 1, { topics: null });
    const names = after.results.map((r) => [r.logDir, r.topics.map((t) => t.name).filter((n) => n !== '__consumer_offsets')]);
    expect(names).to.deep.equal([
      [a, ['n']],
      [bb, []],
      [c, ['n']],
    ]);
  });

  it('refuses to start on a partition directory in two dirs, or a dir of another node (GREGOR_ERR_*, also from `gregor start`)', async () => {
    const [a, bb] = ['a', 'b'].map((n) => join(root, n)) as [string, string];
    b = await start([a, bb]);
    const admin = new Kafka({ brokers: [b.bootstrap], clientId: 'logdirs', logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: 'd', numPartitions: 1 }] });
    await admin.disconnect();
    await produce(b.bootstrap, 'd', 1, 3);
    await b.stop();
    b = undefined;

    const refusal = async (): Promise<string> => {
      const err = await start([a, bb]).then(
        (ok) => {
          b = ok;
          return null;
        },
        (e: unknown) => e as Error,
      );
      expect(err, 'the broker started').to.be.instanceOf(Error);
      return (err as Error).message;
    };
    cpSync(join(a, 'd-0'), join(bb, 'd-0'), { recursive: true });
    expect(await refusal()).to.match(/^GREGOR_ERR_LOG_DIR_DUPLICATE: partition d-0 has a directory in two log dirs/);
    const r = spawnSync(
      process.execPath,
      [join(PROJECT_ROOT, 'bin/gregor.js'), 'start', '--override', `log.dirs=${a},${bb}`, '--port', '0'],
      {
        encoding: 'utf8',
        timeout: 30_000,
      },
    );
    expect(r.status, r.stderr).to.be.a('number').and.not.equal(0);
    expect(r.stderr + r.stdout).to.include('GREGOR_ERR_LOG_DIR_DUPLICATE: partition d-0');
    rmSync(join(bb, 'd-0'), { recursive: true });

    const meta = join(bb, 'meta.properties');
    writeFileSync(meta, readFileSync(meta, 'utf8').replace(/^node\.id=.*$/m, 'node.id=7'));
    expect(await refusal()).to.match(/^GREGOR_ERR_LOG_DIR_IDENTITY: log dir .* belongs to cluster .* node 7/);
    // the refused dirs were left as they were: restoring the file starts the broker with its data
    writeFileSync(meta, readFileSync(meta, 'utf8').replace(/^node\.id=.*$/m, 'node.id=0'));
    b = await start([a, bb]);
    raw = await RawClient.connect(b.bootstrap);
    const res = await raw.request<DescribeLogDirsResponse>(ApiKey.DescribeLogDirs, 2, { topics: [{ topic: 'd', partitions: [0] }] });
    expect(res.results.map((x) => x.topics.map((t) => [t.name, t.partitions[0]?.partitionSize]))).to.deep.equal([
      [['d', segmentBytes(join(a, 'd-0'))]],
      [],
    ]);
  });
});
