/**
 * The CLI's data paths against a real broker: binary-safe produce/consume (all 256 byte values in
 * keys, values and headers, checked on the wire too), every codec down to the segment file, `group
 * seek` moving a real kafkajs group, and `cluster health --exit-when-healthy` waiting for a broker.
 */
import { expect } from 'chai';
import { createRequire } from 'node:module';
import net from 'node:net';
import { join } from 'node:path';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { decodeRecords } from '../../protocol/records/index.js';
import { escapeBytes } from '../../lib/cli/encoding.js';
import { startChildBroker, startTestBroker, tempDir, type TestBroker } from '../helpers/broker.js';
import { cliOk, runCli } from '../helpers/cli.js';
import { RawClient, rawFetch } from '../helpers/raw-client.js';
import { Cleanup } from '../helpers/cleanup.js';

const require = createRequire(import.meta.url);
const { Kafka, logLevel } = require('kafkajs') as typeof import('kafkajs');

const ALL = Buffer.from(Array.from({ length: 256 }, (_, i) => i));

async function fetchRecords(bootstrap: string, topic: string, partition = 0) {
  const c = await RawClient.connect(bootstrap);
  try {
    const p = await rawFetch(c, topic, partition, 0n);
    return decodeRecords(p.records ?? Buffer.alloc(0), { maxOutput: 1 << 24 }).records;
  } finally {
    c.socket.destroy();
  }
}

function freePort(): Promise<number> {
  const s = net.createServer();
  return new Promise((resolve) =>
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    }),
  );
}

describe('cli: data round trips against a real broker', function () {
  this.timeout(120_000);
  let b: TestBroker;
  const B = () => ['-b', b.bootstrap];

  const cleanup = new Cleanup();
  before(async () => {
    b = cleanup.add(await startTestBroker({ 'num.partitions': 1 }), (t) => t.stop());
  });
  after(() => cleanup.run());

  it('produce and consume round-trip all 256 byte values in keys, values and headers (base64, escape, hex, raw)', async () => {
    await cliOk(['topic', 'create', 'bin', ...B()]);
    const b64 = ALL.toString('base64');
    await cliOk(['produce', 'bin', '--input', 'json', '-E', 'base64', ...B()], {
      input: `${JSON.stringify({ key: b64, value: b64, headers: [{ key: 'bin', value: b64 }] })}\n`,
    });
    const esc = escapeBytes(ALL);
    await cliOk(['produce', 'bin', '-E', 'escape', '-K', '\t', '-H', `bin=${esc}`, ...B()], { input: `${esc}\t${esc}\n` });
    // utf8 takes the line's bytes as they are: every byte but the newline that ends the line
    const raw = Buffer.from(ALL.filter((x) => x !== 0x0a));
    await cliOk(['produce', 'bin', ...B()], { input: Buffer.concat([raw, Buffer.from('\n')]) });

    // on the wire (our record decoder, not the CLI's consumer)
    const stored = await fetchRecords(b.bootstrap, 'bin');
    expect(stored).to.have.length(3);
    for (const r of stored.slice(0, 2)) {
      expect(r.key?.equals(ALL)).to.equal(true);
      expect(r.value?.equals(ALL)).to.equal(true);
      expect(r.headers[0]?.key).to.equal('bin');
      expect(r.headers[0]?.value?.equals(ALL)).to.equal(true);
    }
    expect(stored[2]?.key).to.equal(null);
    expect(stored[2]?.value?.equals(raw)).to.equal(true);

    // and back through the CLI in each encoding
    const json = await cliOk(['consume', 'bin', '-e', '-E', 'base64', ...B()]);
    const lines = json.out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { key: string | null; value: string; headers: { key: string; value: string }[] });
    for (const l of lines.slice(0, 2)) {
      expect(Buffer.from(l.key ?? '', 'base64').equals(ALL)).to.equal(true);
      expect(Buffer.from(l.value, 'base64').equals(ALL)).to.equal(true);
      expect(Buffer.from(l.headers[0]?.value ?? '', 'base64').equals(ALL)).to.equal(true);
    }
    const escaped = await cliOk(['consume', 'bin', '-e', '-E', 'escape', '-c', '2', '-f', '%k\\t%v\\t%h\\n', ...B()]);
    expect(escaped.out).to.equal(`${esc}\t${esc}\tbin=${esc}\n`.repeat(2));
    const hex = await cliOk(['consume', 'bin', '-o', '2', '-e', '-E', 'hex', '-f', '%v', ...B()]);
    expect(hex.out).to.equal(raw.toString('hex'));
    const rawOut = await cliOk(['consume', 'bin', '-o', '2', '-e', '-f', '%v', ...B()]);
    expect(rawOut.stdout.equals(raw)).to.equal(true);
    // consume --format json output is produce --input json input: a copy is exact
    await cliOk(['topic', 'create', 'bin-copy', ...B()]);
    await cliOk(['produce', 'bin-copy', '--input', 'json', '-E', 'base64', ...B()], { input: json.out });
    const copy = await fetchRecords(b.bootstrap, 'bin-copy');
    expect(copy.map((r) => [r.key?.toString('hex'), r.value?.toString('hex'), r.timestamp])).to.deep.equal(
      stored.map((r) => [r.key?.toString('hex'), r.value?.toString('hex'), r.timestamp]),
    );
  });

  it('every codec is written as asked (dump-log of the broker segment) and read back', async () => {
    await cliOk(['topic', 'create', 'codecs', ...B()]);
    const codecs = ['none', 'gzip', 'snappy', 'lz4', 'zstd'];
    for (const z of codecs) await cliOk(['produce', 'codecs', '-z', z, ...B()], { input: `${z}-1\n${z}-2\n` });
    const out = await cliOk(['consume', 'codecs', '-e', '-f', '%v ', ...B()]);
    expect(out.out).to.equal(codecs.map((z) => `${z}-1 ${z}-2 `).join(''));
    const dir = join(b.dataDir, 'codecs-0');
    const log = join(dir, readdirSync(dir).find((f) => f.endsWith('.log')) ?? '');
    let dump = '';
    for (let i = 0; i < 50 && (dump.match(/^baseOffset/gm) ?? []).length < 5; i++) {
      dump = (await cliOk(['debug', 'dump-log', '--print-data', log])).out;
      if ((dump.match(/^baseOffset/gm) ?? []).length < 5) await new Promise((r) => setTimeout(r, 100));
    }
    expect([...dump.matchAll(/compresscodec: (\w+) crc: \d+ isvalid: true/g)].map((m) => m[1])).to.deep.equal(codecs);
    expect(dump).to.contain('| offset: 9 CreateTime: ');
    expect(dump).to.match(/payload: zstd-2\n/);
  });

  it('group seek moves a real kafkajs group: refused while it runs, then its next consume starts there', async () => {
    await cliOk(['topic', 'create', 'seek-t', ...B()]);
    await cliOk(['produce', 'seek-t', ...B()], { input: 'r0\nr1\nr2\nr3\nr4\n' });
    const kafka = new Kafka({ brokers: [b.bootstrap], clientId: 'kjs-seek', logLevel: logLevel.NOTHING });
    const seen: string[] = [];
    const c1 = kafka.consumer({ groupId: 'seek-g', heartbeatInterval: 500, maxWaitTimeInMs: 100 });
    await c1.connect();
    await c1.subscribe({ topic: 'seek-t', fromBeginning: true });
    await c1.run({
      eachMessage: ({ message }) => {
        seen.push(String(message.value));
        return Promise.resolve();
      },
    });
    for (let i = 0; i < 200 && seen.length < 5; i++) await new Promise((r) => setTimeout(r, 50));
    expect(seen).to.deep.equal(['r0', 'r1', 'r2', 'r3', 'r4']);

    const live = await cliOk(['group', 'describe', 'seek-g', '--format', 'json', ...B()]);
    const d = (
      JSON.parse(live.out) as {
        state: string;
        members: { clientId: string }[];
        partitions: { memberId: string | null; clientId: string | null }[];
      }[]
    )[0];
    expect(d?.state).to.equal('Stable');
    expect(d?.members.map((m) => m.clientId)).to.deep.equal(['kjs-seek']);
    expect(d?.partitions[0]?.clientId).to.equal('kjs-seek');
    const refused = await runCli(['group', 'seek', 'seek-g', '--to', 'start', '--execute', ...B()]);
    expect(refused.code).to.equal(1);
    expect(refused.err).to.match(
      /^gregor: group 'seek-g' is Stable with 1 member\(s\) \(coordinator broker 0 \(127\.0\.0\.1:\d+\)\): offsets can only be moved while the group is inactive; stop its consumers first \[GREGOR_ERR_CLI_GROUP_NOT_EMPTY\]\n$/,
    );

    await c1.disconnect();
    const plan = await cliOk(['group', 'seek', 'seek-g', '--to', '2', '--format', 'json', ...B()]);
    expect(JSON.parse(plan.out)).to.deep.equal({
      group: 'seek-g',
      executed: false,
      partitions: [{ topic: 'seek-t', partition: 0, currentOffset: 5, newOffset: 2 }],
    });
    await cliOk(['group', 'seek', 'seek-g', '--to', '2', '--execute', ...B()]);

    const again: { offset: string; value: string }[] = [];
    const c2 = kafka.consumer({ groupId: 'seek-g', heartbeatInterval: 500, maxWaitTimeInMs: 100 });
    await c2.connect();
    await c2.subscribe({ topic: 'seek-t', fromBeginning: true });
    await c2.run({
      eachMessage: ({ message }) => {
        again.push({ offset: message.offset, value: String(message.value) });
        return Promise.resolve();
      },
    });
    for (let i = 0; i < 200 && again.length < 3; i++) await new Promise((r) => setTimeout(r, 50));
    await c2.disconnect();
    expect(again).to.deep.equal([
      { offset: '2', value: 'r2' },
      { offset: '3', value: 'r3' },
      { offset: '4', value: 'r4' },
    ]);
    // by time: the first record at or after the timestamp of r3
    const r3 = (await fetchRecords(b.bootstrap, 'seek-t'))[3];
    const byTime = await cliOk(['group', 'seek', 'seek-g', '--to', `@${r3?.timestamp}`, '--format', 'json', ...B()]);
    expect((JSON.parse(byTime.out) as { partitions: { newOffset: number }[] }).partitions[0]?.newOffset).to.be.at.most(3);
  });

  it('cluster health --exit-when-healthy exits 0 as soon as a broker started after it is up', async () => {
    const port = await freePort();
    const dataDir = tempDir();
    const started = performance.now();
    const waiting = runCli(
      ['cluster', 'health', '--exit-when-healthy', '--timeout', '60s', '--format', 'json', '-b', `127.0.0.1:${port}`],
      { timeoutMs: 70_000 },
    );
    await new Promise((r) => setTimeout(r, 1500));
    const broker = await startChildBroker(dataDir, port, { 'admin.listener': 'none' });
    const up = performance.now();
    try {
      const r = await waiting;
      const exitedAt = started + r.ms;
      expect(r.code, r.err).to.equal(0);
      expect(JSON.parse(r.out)).to.deep.include({ healthy: true, nodesDown: [], leaderlessPartitions: [] });
      expect(exitedAt - up, 'exit after the broker was up (ms)').to.be.below(1500);
      console.log(`      health: the CLI exited ${Math.round(exitedAt - up)} ms after the broker printed its ready line`);
    } finally {
      broker.child.kill('SIGTERM');
      await broker.exited;
      if (existsSync(dataDir)) rmSync(dataDir, { recursive: true, force: true });
    }
    const gone = await runCli(['cluster', 'health', '-w', '--timeout', '800ms', '-b', `127.0.0.1:${port}`]);
    expect(gone.code).to.equal(1);
    expect(gone.out).to.match(/Healthy: +false/);
    expect(gone.err).to.contain('gregor: the cluster is not healthy after 800 ms: bootstrap_unreachable [GREGOR_ERR_CLI_UNHEALTHY]');
    expect(gone.ms).to.be.below(5000);
  });
});
