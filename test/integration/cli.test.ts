/**
 * The `gregor` tool commands against a real broker, run as child processes: goldens of the text and
 * JSON output of every command (test/fixtures/cli/), error messages that name the broker and the
 * Kafka error code, and the exit codes.
 */
import { expect } from 'chai';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { cliOk, golden, normalise, runCli, samewidth, type Normaliser } from '../helpers/cli.js';
import { RawClient } from '../helpers/raw-client.js';
import { Cleanup } from '../helpers/cleanup.js';

const T0 = 1700000000000;

/** Records with fixed keys, timestamps and headers (for --input json). */
function fixedRecords(n: number, prefix: string): string {
  return (
    Array.from({ length: n }, (_, i) =>
      JSON.stringify({
        key: `${prefix}-k${i}`,
        value: `${prefix}-value-${i}`,
        timestamp: T0 + i * 1000,
        headers: [{ key: 'n', value: String(i) }],
      }),
    ).join('\n') + '\n'
  );
}

/** JSON lines sorted by partition, then offset (partitions may come back in any order). */
function sortJsonLines(out: string): string {
  const lines = out.split('\n').filter((l) => l !== '');
  const key = (l: string) => {
    const o = JSON.parse(l) as { partition: number; offset: number };
    return o.partition * 1e9 + o.offset;
  };
  return lines.sort((a, b) => key(a) - key(b)).join('\n') + '\n';
}

/** Text lines "<topic> <partition> <offset> ..." sorted by partition and offset. */
function sortTextLines(out: string): string {
  const lines = out.split('\n').filter((l) => l !== '');
  const key = (l: string) => {
    const [, p, o] = l.split(' ');
    return Number(p) * 1e9 + Number(o);
  };
  return lines.sort((a, b) => key(a) - key(b)).join('\n') + '\n';
}

describe('cli: every command against a real broker (goldens)', function () {
  this.timeout(120_000);
  let b: TestBroker;
  let rules: Normaliser;
  const B = () => ['-b', b.bootstrap];
  const g = (name: string, text: string) => golden(name, normalise(text, rules));

  const cleanup = new Cleanup();
  before(async () => {
    b = cleanup.add(await startTestBroker({ 'num.partitions': 1 }), (t) => t.stop());
    const port = b.bootstrap.split(':').pop() as string;
    rules = [
      [b.bootstrap, '127.0.0.1:PORT'],
      [new RegExp(`\\b${port}\\b`, 'g'), samewidth('PORT', port.length)],
      [/^(ID +)[A-Za-z0-9_-]{22}$/gm, '$1<id>'],
      [/"(topicId|clusterId)": "[A-Za-z0-9_-]{22}"/g, '"$1": "<id>"'],
    ];
  });
  after(() => cleanup.run());

  it('topic create: text and JSON; an existing topic is TOPIC_ALREADY_EXISTS (36) naming the broker', async () => {
    g('topic-create.txt', (await cliOk(['topic', 'create', 'orders', '-p', '3', '-c', 'retention.ms=86400000', ...B()])).out);
    g('topic-create.json', (await cliOk(['topic', 'create', 'events', 'logs', '-p', '1', '--format', 'json', ...B()])).out);
    const again = await runCli(['topic', 'create', 'orders', 'fresh', '-p', '3', ...B()]);
    expect(again.code).to.equal(1);
    g('topic-create-exists.txt', again.out);
    expect(again.err).to.equal(
      `gregor: CreateTopics on broker 0 (${b.bootstrap}): topic 'orders': TOPIC_ALREADY_EXISTS (36): Topic 'orders' already exists. [GREGOR_ERR_CLIENT_KAFKA]\n`,
    );
    const tolerated = await runCli(['topic', 'create', 'orders', '-p', '3', '--if-not-exists', ...B()]);
    expect(tolerated.code).to.equal(0);
    expect(tolerated.out).to.match(/orders +- +- +EXISTS/);
    const dry = await cliOk(['topic', 'create', 'never', '-p', '2', '--dry-run', ...B()]);
    expect(dry.out).to.match(/never +2 +1 +OK \(dry run\)/);
  });

  it('topic list', async () => {
    g('topic-list.txt', (await cliOk(['topic', 'list', ...B()])).out);
    g('topic-list.json', (await cliOk(['topic', 'list', '--format', 'json', ...B()])).out);
    // __consumer_offsets is created on first use (a FindCoordinator for a group), as Kafka does
    expect((await cliOk(['topic', 'list', '-i', ...B()])).out).to.not.contain('__consumer_offsets');
    const c = await RawClient.connect(b.bootstrap);
    try {
      await c.request(10, 1, { key: 'cli-g', keyType: 0 }, 30_000);
      // one node answers FindCoordinator at once and makes the topic meanwhile (a few ms)
      const deadline = Date.now() + 10_000;
      const listed = async () =>
        (
          await c.request<{ topics: { name: string | null }[] }>(3, 9, {
            topics: null,
            allowAutoTopicCreation: false,
            includeTopicAuthorizedOperations: false,
          })
        ).topics.some((t) => t.name === '__consumer_offsets');
      while (!(await listed()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    } finally {
      c.destroy();
    }
    const internal = await cliOk(['topic', 'list', '-i', ...B()]);
    expect(internal.out).to.contain('__consumer_offsets (internal)');
  });

  it('produce: stdin lines and JSON records, text and JSON summaries', async () => {
    g('produce.txt', (await cliOk(['produce', 'orders', '--input', 'json', ...B()], { input: fixedRecords(6, 'o') })).out);
    g(
      'produce.json',
      (
        await cliOk(['produce', 'events', '-K', ':', '-H', 'src=cli', '-H', 'kind=line', '--format', 'json', ...B()], {
          input: 'a:one\nb:two\nc:three\n',
        })
      ).out,
    );
    // a fixed partition, a tombstone, acks 1 and 0, every codec
    const t = await cliOk(['produce', 'logs', '-p', '0', '-Z', '--acks', '1', '-z', 'zstd', '--format', 'json', ...B()], {
      input: 'x\n\ny\n',
    });
    expect(JSON.parse(t.out)).to.deep.equal({
      topic: 'logs',
      records: 3,
      partitions: [{ partition: 0, records: 3, firstOffset: 0, lastOffset: 2 }],
    });
    for (const z of ['gzip', 'snappy', 'lz4']) await cliOk(['produce', 'logs', '-z', z, ...B()], { input: `${z}\n` });
    const zero = await cliOk(['produce', 'logs', '--acks', '0', '--format', 'json', ...B()], { input: 'fire-and-forget\n' });
    expect(JSON.parse(zero.out)).to.deep.equal({
      topic: 'logs',
      records: 1,
      partitions: [{ partition: 0, records: 1, firstOffset: null, lastOffset: null }],
    });
  });

  it('consume: JSON lines by default, kcat format strings, -o start/-N/@time/offset, -c, -p, -e', async () => {
    g('consume.json', sortJsonLines((await cliOk(['consume', 'orders', '-e', ...B()])).out));
    g('consume-format.txt', sortTextLines((await cliOk(['consume', 'orders', '-e', '-f', '%t %p %o %k %v %h %T\\n', ...B()])).out));
    g('consume-events.txt', (await cliOk(['consume', 'events', '-e', '--format', 'text', ...B()])).out);
    const last = await cliOk(['consume', 'orders', '-o', '-1', '-e', '-f', '%p:%o ', ...B()]);
    expect(last.out.trim().split(' ').sort()).to.deep.equal(['0:4', '1:0']); // partition 2 got no key (murmur2)
    const byTime = await cliOk(['consume', 'orders', '-o', `@${T0 + 4000}`, '-e', '-f', '%T\\n', ...B()]);
    expect(byTime.out.trim().split('\n').map(Number).sort()).to.deep.equal([T0 + 4000, T0 + 5000]);
    const iso = await cliOk(['consume', 'orders', '-o', `@${new Date(T0 + 5000).toISOString()}`, '-e', '-f', '%v\\n', ...B()]);
    expect(iso.out).to.equal('o-value-5\n');
    const count = await cliOk(['consume', 'orders', '-c', '2', '-f', '%v\\n', ...B()]);
    expect(count.out.trim().split('\n')).to.have.length(2);
    const logs = await cliOk(['consume', 'logs', '-p', '0', '-o', '1', '-e', '-f', '[%v] %S\\n', ...B()]);
    expect(logs.out).to.equal('[] -1\n[y] 1\n[gzip] 4\n[snappy] 6\n[lz4] 3\n[fire-and-forget] 15\n');
    const clamped = await cliOk(['consume', 'logs', '-o', '99', '-e', ...B()]);
    expect(clamped.out).to.equal('');
    expect(clamped.err).to.contain('% logs-0: offset 99 is outside the log (0..7); starting at 7');
  });

  it('offsets: latest, earliest, by time', async () => {
    g('offsets.txt', (await cliOk(['offsets', 'orders', 'events', ...B()])).out);
    g('offsets.json', (await cliOk(['offsets', 'orders', '--time', 'earliest', '--format', 'json', ...B()])).out);
    g('offsets-time.txt', (await cliOk(['offsets', 'orders', '--time', String(T0 + 3500), ...B()])).out);
    const max = await cliOk(['offsets', 'orders', '-p', '0', '--time', 'max-timestamp', '--format', 'json', ...B()]);
    expect((JSON.parse(max.out) as { offset: number }[])[0]?.offset).to.be.a('number');
  });

  it('topic describe: summary, configs that differ from the defaults, partitions with offsets', async () => {
    g('topic-describe.txt', (await cliOk(['topic', 'describe', 'orders', ...B()])).out);
    g('topic-describe.json', (await cliOk(['topic', 'describe', 'events', '--format', 'json', ...B()])).out);
    const all = await cliOk(['topic', 'describe', 'events', '--all-configs', '--format', 'json', ...B()]);
    const configs = (JSON.parse(all.out) as { configs: { name: string; source: string }[] }[])[0]?.configs ?? [];
    expect(configs.find((c) => c.name === 'cleanup.policy')?.source).to.equal('DEFAULT_CONFIG');
  });

  it('topic alter-config and add-partitions', async () => {
    g(
      'topic-alter-config.txt',
      (
        await cliOk([
          'topic',
          'alter-config',
          'orders',
          '--set',
          'retention.ms=3600000',
          '--set',
          'cleanup.policy=compact',
          '--delete',
          'segment.ms',
          ...B(),
        ])
      ).out,
    );
    g(
      'topic-alter-config.json',
      (await cliOk(['topic', 'alter-config', 'events', '--append', 'cleanup.policy=compact', '--format', 'json', ...B()])).out,
    );
    const d = await cliOk(['topic', 'describe', 'orders', '--format', 'json', ...B()]);
    const configs = (JSON.parse(d.out) as { configs: { name: string; value: string }[] }[])[0]?.configs ?? [];
    expect(configs.filter((c) => ['retention.ms', 'cleanup.policy'].includes(c.name)).map((c) => [c.name, c.value])).to.deep.equal([
      ['cleanup.policy', 'compact'],
      ['retention.ms', '3600000'],
    ]);
    const bad = await runCli(['topic', 'alter-config', 'orders', '--set', 'no.such.config=1', ...B()]);
    expect(bad.code).to.equal(1);
    expect(bad.err).to.match(
      new RegExp(`IncrementalAlterConfigs on broker 0 \\(${b.bootstrap}\\): topic 'orders': INVALID_CONFIG \\(40\\)`),
    );
    g('topic-add-partitions.txt', (await cliOk(['topic', 'add-partitions', 'events', '--num', '2', ...B()])).out);
    g('topic-add-partitions.json', (await cliOk(['topic', 'add-partitions', 'logs', '--total', '3', '--format', 'json', ...B()])).out);
    const shrink = await runCli(['topic', 'add-partitions', 'logs', '--total', '2', ...B()]);
    expect(shrink.code).to.equal(1);
    expect(shrink.err).to.match(/CreatePartitions on broker 0 .*: topic 'logs': INVALID_PARTITIONS \(37\)/);
  });

  it('group list, describe (committed offset, log end, lag), seek (plan, then --execute), delete', async () => {
    await cliOk(['consume', 'orders', '-g', 'cli-group', '-c', '4', ...B()]);
    await cliOk(['consume', 'events', '-g', 'other-group', '-e', ...B()]);
    g('group-list.txt', (await cliOk(['group', 'list', ...B()])).out);
    g('group-list.json', (await cliOk(['group', 'list', '--format', 'json', ...B()])).out);
    const empty = await cliOk(['group', 'list', '--state', 'Stable', '--format', 'json', ...B()]);
    expect(JSON.parse(empty.out)).to.deep.equal([]);
    g('group-describe.txt', (await cliOk(['group', 'describe', 'cli-group', ...B()])).out);
    g('group-describe.json', (await cliOk(['group', 'describe', 'other-group', '--format', 'json', ...B()])).out);
    g('group-seek.txt', (await cliOk(['group', 'seek', 'cli-group', '--to', 'start', ...B()])).out);
    g(
      'group-seek.json',
      (await cliOk(['group', 'seek', 'cli-group', '--to', '1', '--topic', 'orders:0,2', '--execute', '--format', 'json', ...B()])).out,
    );
    const after = await cliOk(['group', 'describe', 'cli-group', '--format', 'json', ...B()]);
    const rows = (JSON.parse(after.out) as { partitions: { partition: number; committedOffset: number | null }[] }[])[0]?.partitions ?? [];
    expect(rows.filter((r) => r.partition !== 1).map((r) => r.committedOffset)).to.deep.equal([1, 0]); // partition 2 is empty: clamped to its end
    await cliOk(['group', 'seek', 'cli-group', '--to', 'end', '--execute', ...B()]);
    const lag = await cliOk(['group', 'describe', 'cli-group', '--format', 'json', ...B()]);
    expect((JSON.parse(lag.out) as { totalLag: number }[])[0]?.totalLag).to.equal(0);
    g('group-delete.txt', (await cliOk(['group', 'delete', 'cli-group', ...B()])).out);
    g('group-delete.json', (await cliOk(['group', 'delete', 'other-group', '--format', 'json', ...B()])).out);
    const gone = await runCli(['group', 'delete', 'cli-group', ...B()]);
    expect(gone.code).to.equal(1);
    expect(gone.err).to.equal(
      `gregor: DeleteGroups on broker 0 (${b.bootstrap}): group 'cli-group': GROUP_ID_NOT_FOUND (69) [GREGOR_ERR_CLIENT_KAFKA]\n`,
    );
    const missing = await runCli(['group', 'describe', 'no-such-group', ...B()]);
    expect(missing.code).to.equal(1);
    expect(missing.err).to.contain("group 'no-such-group': GROUP_ID_NOT_FOUND (69)");
  });

  it('cluster info and health', async () => {
    g('cluster-info.txt', (await cliOk(['cluster', 'info', ...B()])).out);
    g('cluster-info.json', (await cliOk(['cluster', 'info', '--format', 'json', ...B()])).out);
    g('cluster-health.txt', (await cliOk(['cluster', 'health', ...B()])).out);
    g('cluster-health.json', (await cliOk(['cluster', 'health', '--format', 'json', ...B()])).out);
    const apis = await cliOk(['cluster', 'info', '--api-versions', '--format', 'json', ...B()]);
    const list =
      (JSON.parse(apis.out) as { apiVersions: { apis: { name: string; usedVersion: number | null }[] }[] }).apiVersions[0]?.apis ?? [];
    expect(list.find((a) => a.name === 'Fetch')?.usedVersion).to.equal(17);
  });

  it('topic delete; errors name the broker and the Kafka error code', async () => {
    g('topic-delete.txt', (await cliOk(['topic', 'delete', 'logs', ...B()])).out);
    g('topic-delete.json', (await cliOk(['topic', 'delete', 'events', '--format', 'json', ...B()])).out);
    const again = await runCli(['topic', 'delete', 'events', ...B()]);
    expect(again.code).to.equal(1);
    expect(again.err).to.equal(
      `gregor: DeleteTopics on broker 0 (${b.bootstrap}): topic 'events': UNKNOWN_TOPIC_OR_PARTITION (3): This server does not host this topic-partition. [GREGOR_ERR_CLIENT_KAFKA]\n`.replace(
        ': This server does not host this topic-partition.',
        again.err.includes('does not host') ? ': This server does not host this topic-partition.' : '',
      ),
    );
    expect((await runCli(['topic', 'delete', 'events', '--if-exists', ...B()])).code).to.equal(0);
    const consume = await runCli(['consume', 'events', '-e', ...B()]);
    expect(consume.code).to.equal(1);
    expect(consume.err).to.equal("gregor: topic 'events' does not exist: UNKNOWN_TOPIC_OR_PARTITION (3) [GREGOR_ERR_CLIENT_NOT_FOUND]\n");
    const partition = await runCli(['produce', 'orders', '-p', '7', ...B()], { input: 'x\n' });
    expect(partition.code).to.equal(1);
    expect(partition.err).to.contain('partition orders-7 does not exist (the topic has 3): UNKNOWN_TOPIC_OR_PARTITION (3)');
    const badInput = await runCli(['produce', 'orders', '--input', 'json', ...B()], { input: '{"value":"ok"}\n{oops\n' });
    expect(badInput.code).to.equal(1);
    expect(badInput.err).to.match(/^gregor: stdin line 2: not JSON: .* \[GREGOR_ERR_CLI_INPUT\]\n$/);
  });
});
