/**
 * The same CLI commands against librdkafka's mock cluster, a Kafka that is not gregor. It answers
 * ApiVersions (v0-2 only), Metadata, Produce, Fetch, ListOffsets, FindCoordinator, the classic group
 * APIs and OffsetCommit/OffsetFetch, but no admin API: the commands that need CreateTopics,
 * DeleteTopics, DescribeConfigs/IncrementalAlterConfigs, CreatePartitions, ListGroups,
 * DescribeGroups or DeleteGroups are skipped here, and this checks that they fail cleanly (exit 1,
 * naming the broker and the missing API). Goldens: test/fixtures/cli/mock-*.
 */
import { expect } from 'chai';
import { cliOk, golden, normalise, runCli, samewidth, type Normaliser } from '../helpers/cli.js';
import { rdkafkaMockMissing, startRdkafkaMock, type RdkafkaMock } from '../helpers/rdkafka-mock.js';
import { Cleanup } from '../helpers/cleanup.js';

const ALL = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
const T0 = 1700000000000;

/** Commands that need an API the mock does not have, and the API they report missing. */
export const SKIPPED_ON_MOCK: readonly [string[], string][] = [
  [['topic', 'create', 'x', '-p', '1', '-r', '1'], 'CreateTopics'],
  [['topic', 'delete', 'mock-t'], 'DeleteTopics'],
  [['topic', 'alter-config', 'mock-t', '--set', 'retention.ms=1'], 'DescribeConfigs'],
  [['topic', 'add-partitions', 'mock-t', '--num', '1'], 'CreatePartitions'],
  [['group', 'list'], 'ListGroups'],
  [['group', 'describe', 'mock-g'], 'DescribeGroups'],
  [['group', 'seek', 'mock-g', '--to', 'start'], 'DescribeGroups'],
  [['group', 'delete', 'mock-g'], 'DeleteGroups'],
];

describe('cli: against the librdkafka mock cluster', function () {
  this.timeout(120_000);
  let mock: RdkafkaMock;
  let rules: Normaliser;
  const B = () => ['-b', mock.bootstrap];
  const g = (name: string, text: string) => golden(name, normalise(text, rules));
  const cleanup = new Cleanup();

  before(async function () {
    const missing = rdkafkaMockMissing();
    if (missing !== null) {
      console.log(`      skipped: ${missing}`);
      this.skip();
    }
    mock = cleanup.add(await startRdkafkaMock(1, ['mock-t:3', 'mock-bin:1']), (m) => m.stop());
    const port = mock.bootstrap.split(':').pop() as string;
    rules = [
      [mock.bootstrap, '127.0.0.1:PORT'],
      [new RegExp(`\\b${port}\\b`, 'g'), samewidth('PORT', port.length)],
      [/mockCluster[0-9a-f]+/g, '<cluster-id>'],
      [/^(ID +)[A-Za-z0-9_-]{22}$/gm, '$1<id>'],
      [/"topicId": "[A-Za-z0-9_-]{22}"/g, '"topicId": "<id>"'],
    ];
  });
  after(() => cleanup.run());

  it('cluster info and health (Metadata: no DescribeCluster on the mock)', async () => {
    g('mock-cluster-info.txt', (await cliOk(['cluster', 'info', ...B()])).out);
    g('mock-cluster-info.json', (await cliOk(['cluster', 'info', '--format', 'json', ...B()])).out);
    g('mock-cluster-health.txt', (await cliOk(['cluster', 'health', ...B()])).out);
    expect((await cliOk(['cluster', 'health', '--exit-when-healthy', '--timeout', '5s', ...B()])).code).to.equal(0);
  });

  it('topic list and describe (configs skipped: no DescribeConfigs)', async () => {
    g('mock-topic-list.txt', (await cliOk(['topic', 'list', ...B()])).out);
    const d = await cliOk(['topic', 'describe', 'mock-t', ...B()]);
    g('mock-topic-describe.txt', d.out);
    expect(d.err).to.match(/^% configs skipped: broker 1 \(127\.0\.0\.1:\d+\) does not support DescribeConfigs\n$/);
    const j = await cliOk(['topic', 'describe', 'mock-t', '--format', 'json', ...B()]);
    expect((JSON.parse(j.out) as { configs: unknown }[])[0]?.configs).to.equal(null);
  });

  it('produce, consume (assigned and as a group), offsets', async () => {
    const input = Array.from({ length: 6 }, (_, i) =>
      JSON.stringify({ key: `k${i}`, value: `v${i}`, partition: i % 3, timestamp: T0 + i, headers: { i: String(i) } }),
    ).join('\n');
    g('mock-produce.txt', (await cliOk(['produce', 'mock-t', '--input', 'json', ...B()], { input })).out);
    for (const z of ['gzip', 'snappy', 'lz4', 'zstd']) await cliOk(['produce', 'mock-t', '-p', '0', '-z', z, ...B()], { input: `${z}\n` });
    const c = await cliOk(['consume', 'mock-t', '-e', '-f', '%p %o %k %v %h %T\\n', ...B()]);
    const lines = c.out.trim().split('\n').sort();
    expect(lines.slice(0, 2)).to.deep.equal([`0 0 k0 v0 i=0 ${T0}`, `0 1 k3 v3 i=3 ${T0 + 3}`]);
    expect(lines.slice(2, 6).map((l) => l.split(' ')[3])).to.deep.equal(['gzip', 'snappy', 'lz4', 'zstd']);
    expect(lines.slice(6)).to.deep.equal([
      `1 0 k1 v1 i=1 ${T0 + 1}`,
      `1 1 k4 v4 i=4 ${T0 + 4}`,
      `2 0 k2 v2 i=2 ${T0 + 2}`,
      `2 1 k5 v5 i=5 ${T0 + 5}`,
    ]);
    g('mock-offsets.txt', (await cliOk(['offsets', 'mock-t', ...B()])).out);
    g('mock-offsets.json', (await cliOk(['offsets', 'mock-t', '--time', 'earliest', '--format', 'json', ...B()])).out);
    const last = await cliOk(['consume', 'mock-t', '-p', '1', '-o', '-1', '-e', '-f', '%v', ...B()]);
    expect(last.out).to.equal('v4');
    // as a classic group member: the second run starts at the committed offsets
    const first = await cliOk(['consume', 'mock-t', '-g', 'mock-g', '-e', '-f', '%v\\n', ...B()]);
    expect(first.out.trim().split('\n')).to.have.length(10);
    expect(first.err).to.match(/% joined group 'mock-g' \(generation \d+, 3 partition\(s\): mock-t-0, mock-t-1, mock-t-2\)/);
    await cliOk(['produce', 'mock-t', '-p', '2', ...B()], { input: 'late\n' });
    const second = await cliOk(['consume', 'mock-t', '-g', 'mock-g', '-e', '-f', '%v\\n', ...B()]);
    expect(second.out).to.equal('late\n');
  });

  it('binary-safe round trip through the mock (all 256 byte values)', async () => {
    const b64 = ALL.toString('base64');
    await cliOk(['produce', 'mock-bin', '--input', 'json', '-E', 'base64', ...B()], {
      input: JSON.stringify({ key: b64, value: b64, headers: [{ key: 'b', value: b64 }] }),
    });
    const out = await cliOk(['consume', 'mock-bin', '-e', '-E', 'hex', '-f', '%k %v %h', ...B()]);
    expect(out.out).to.equal(`${ALL.toString('hex')} ${ALL.toString('hex')} b=${ALL.toString('hex')}`);
  });

  it('commands needing admin APIs the mock lacks fail with exit 1, naming the broker and the API', async () => {
    for (const [args, api] of SKIPPED_ON_MOCK) {
      const r = await runCli([...args, ...B()]);
      expect(r.code, args.join(' ')).to.equal(1);
      expect(r.err, args.join(' ')).to.match(
        new RegExp(
          `^gregor: broker 1 \\(127\\.0\\.0\\.1:\\d+\\) does not support ${api} \\(we speak v\\d+-\\d+, the broker does not offer it\\) \\[GREGOR_ERR_CLIENT_UNSUPPORTED_API\\]\\n$`,
        ),
      );
    }
  });
});
