/**
 * Corruption on disk (issue 17, item 3), as an operator meets it: a `gregor start` process, data
 * written with kafkajs, the broker stopped (SIGTERM or kill -9), bytes of its files damaged, the
 * broker started again; a real client (kafkajs's own Fetch and decoding) then reads, and the
 * segments pass the full integrity scan (test/helpers/log-scan.ts).
 * - after a kill -9, a flipped byte in a middle segment (CRC) or a garbled batch length: recovery
 *   validates every batch from the recovery point, truncates at the bad one and keeps the cut bytes
 *   and later segments aside as `*.corrupt-<time>`, logging the segment, offsets and bytes;
 * - after a clean stop (no recovery) the read path finds the bad batch: the fetch gets
 *   CORRUPT_MESSAGE (kafkajs; librdkafka via kcat reports it and delivers nothing from there),
 *   produces KAFKA_STORAGE_ERROR, and the next start repairs the log the same way;
 * - a segment below the recovery point is not re-validated after a kill -9 (Kafka's recovery point),
 *   and a corrupt batch there is refused by the read path, not served;
 * - truncated or deleted `.index` / `.timeindex` files are rebuilt at load;
 * - every checkpoint garbled (recovery point, replication offsets, log start, cleaner offsets,
 *   leader epochs, partition summaries) is treated as absent, logged, never a crash;
 * - a garbled meta.properties stops the start with a GREGOR_ERR_LOG_DIR_IDENTITY message.
 * Every record before the damage is served unchanged, nothing after a bad batch is, offsets keep
 * their values.
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { expect } from 'chai';
import { Kafka, logLevel, type Producer } from 'kafkajs';
import { parseEntryHeader } from '../../lib/log/segment-format.js';
import { startChildBroker, tempDir, type ChildBroker } from '../helpers/broker.js';
import { Cleanup } from '../helpers/cleanup.js';
import { errorType, KafkajsPartitionReader, type KjsMessage } from '../helpers/kafkajs-reader.js';
import { scanPartitionDir } from '../helpers/log-scan.js';
import { PROJECT_ROOT } from '../helpers/project.js';
import { KCAT_FORMAT, parseKcatOutput, runKcat } from '../helpers/kcat.js';

type Broker = ChildBroker & { output(): string };
type Line = { msg?: string; level?: number } & Record<string, unknown>;

const RECORDS_PER_BATCH = 10;
const BATCHES = 40;
/** Small segments: the 40 batches of ~2.2 KB spread over several. */
const TOPIC_CONFIGS = [{ name: 'segment.bytes', value: String(16 << 10) }];

function value(topic: string, i: number): Buffer {
  const b = Buffer.alloc(200, (i * 13 + topic.length) % 251);
  b.write(`${topic}:${i}:`, 0);
  return b;
}

function lines(b: Broker): Line[] {
  const out: Line[] = [];
  for (const l of b.output().split('\n')) {
    if (!l.startsWith('{')) continue;
    try {
      out.push(JSON.parse(l) as Line);
    } catch {
      // a line cut by the pipe's chunking: the next poll sees it whole
    }
  }
  return out;
}

/** The first log line with `msg` (and matching `where`), waiting for it: the child's stdout is another pipe. */
async function line(b: Broker, msg: string, where: (l: Line) => boolean = () => true): Promise<Line> {
  for (let i = 0; i < 400; i++) {
    const found = lines(b).find((l) => l.msg === msg && where(l));
    if (found !== undefined) return found;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`no "${msg}" log line in:\n${b.output().slice(-4000)}`);
}

interface Entry {
  position: number;
  size: number;
  baseOffset: bigint;
  lastOffset: bigint;
}

function entriesOf(file: string): Entry[] {
  const buf = fs.readFileSync(file);
  const out: Entry[] = [];
  for (let p = 0; p < buf.length;) {
    const h = parseEntryHeader(buf, p, buf.length - p, p);
    if (h === null || typeof h === 'string') break;
    out.push({ position: p, size: h.size, baseOffset: h.baseOffset, lastOffset: h.lastOffset });
    p += h.size;
  }
  return out;
}

function segmentLogs(dir: string): string[] {
  return fs
    .readdirSync(dir)
    .filter((n) => /^\d{20}\.log$/.test(n))
    .sort()
    .map((n) => path.join(dir, n));
}

/** The kafkajs error type `p` fails with ('resolved' when it does not fail, the message when it has no type). */
async function failure(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    return errorType(e) ?? String(e);
  }
  return 'resolved';
}

function flipByte(file: string, position: number): void {
  const fd = fs.openSync(file, 'r+');
  try {
    const b = Buffer.alloc(1);
    fs.readSync(fd, b, 0, 1, position);
    b[0] = (b[0] as number) ^ 0x5a;
    fs.writeSync(fd, b, 0, 1, position);
  } finally {
    fs.closeSync(fd);
  }
}

describe('corruption: damaged segments, indexes, checkpoints and metadata under a gregor process, kafkajs', function () {
  this.timeout(120_000);
  const cleanup = new Cleanup();
  let dataDir: string;
  let broker: Broker;
  let producer: Producer;

  const start = async (overrides: Record<string, string> = {}): Promise<void> => {
    broker = cleanup.add(await startChildBroker(dataDir, 0, { 'admin.listener': 'none', ...overrides }), async (b) => {
      if (b.child.exitCode === null && b.child.signalCode === null) b.child.kill('SIGKILL');
      await b.exited;
    });
    const kafka = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING, retry: { retries: 2 } });
    producer = cleanup.add(kafka.producer({ retry: { retries: 1 } }), (p) => p.disconnect());
    await producer.connect();
  };
  const stop = async (how: 'SIGTERM' | 'SIGKILL'): Promise<void> => {
    await producer.disconnect();
    broker.child.kill(how);
    const code = await broker.exited;
    if (how === 'SIGTERM') expect(code, broker.output().slice(-3000)).to.equal(0);
  };
  /** Creates `topic` and writes BATCHES batches of RECORDS_PER_BATCH records, one request each. */
  const write = async (topic: string, configs = TOPIC_CONFIGS): Promise<Buffer[]> => {
    const kafka = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: 1, configEntries: configs }] });
    await admin.disconnect();
    const sent: Buffer[] = [];
    for (let b = 0; b < BATCHES; b++) {
      const values = Array.from({ length: RECORDS_PER_BATCH }, (_, i) => value(topic, b * RECORDS_PER_BATCH + i));
      await producer.send({ topic, acks: -1, messages: values.map((v) => ({ value: v })) });
      sent.push(...values);
    }
    return sent;
  };
  const read = async (topic: string, from: bigint, until: bigint): Promise<KjsMessage[]> => {
    const reader = new KafkajsPartitionReader([broker.bootstrap]);
    await reader.connect(topic);
    try {
      return await reader.readAll(topic, 0, from, until);
    } finally {
      await reader.disconnect();
    }
  };
  /** Every record of [0, until) as kafkajs decodes it: offsets in order, values as sent. */
  const expectServed = async (topic: string, sent: Buffer[], until: bigint): Promise<void> => {
    const got = await read(topic, 0n, until);
    expect(got.map((m) => m.offset)).to.deep.equal(Array.from({ length: Number(until) }, (_, i) => String(i)));
    expect(got.every((m, i) => m.value?.equals(sent[i] as Buffer))).to.equal(true);
  };
  const endOffset = async (topic: string): Promise<bigint> => {
    const kafka = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    try {
      return BigInt((await admin.fetchTopicOffsets(topic))[0]?.high ?? '-1');
    } finally {
      await admin.disconnect();
    }
  };
  const partDir = (topic: string): string => path.join(dataDir, `${topic}-0`);

  beforeEach(() => {
    dataDir = cleanup.add(tempDir('gregor-corrupt-'), (d) => fs.rmSync(d, { recursive: true, force: true }));
  });
  afterEach(() => cleanup.run());

  it('kill -9, then a flipped byte mid-segment and a garbled batch length: recovery truncates at the bad batch, keeps the rest aside and logs what it dropped', async () => {
    await start();
    const crc = await write('crc');
    const len = await write('len');
    await stop('SIGKILL');
    // a byte inside the records of the first batch of the second segment
    const crcSegs = segmentLogs(partDir('crc'));
    expect(crcSegs.length).to.be.greaterThan(3);
    const victim = entriesOf(crcSegs[1] as string)[0] as Entry;
    flipByte(crcSegs[1] as string, victim.position + victim.size - 50);
    // the length field of the third batch of the second segment
    const lenSegs = segmentLogs(partDir('len'));
    const lenVictim = entriesOf(lenSegs[1] as string)[2] as Entry;
    flipByte(lenSegs[1] as string, lenVictim.position + 8);
    const droppedCrc = crcSegs.slice(1).reduce((n, f) => n + fs.statSync(f).size, 0);
    await start();
    expect(await endOffset('crc')).to.equal(victim.baseOffset);
    expect(await endOffset('len')).to.equal(lenVictim.baseOffset);
    await expectServed('crc', crc, victim.baseOffset);
    await expectServed('len', len, lenVictim.baseOffset);
    const cut = await line(broker, 'truncating log at an invalid entry, and the segments after it', (l) => l['dir'] === partDir('crc'));
    expect(cut['segment']).to.equal(victim.baseOffset.toString());
    expect(cut['position']).to.equal(0);
    expect(cut['droppedBytes']).to.equal(droppedCrc);
    expect(cut['droppedOffsets']).to.deep.equal([victim.baseOffset.toString(), String(crc.length - 1)]);
    expect(cut['problem']).to.match(/CRC mismatch/);
    const cutLen = await line(broker, 'truncating log at an invalid entry, and the segments after it', (l) => l['dir'] === partDir('len'));
    expect(cutLen['position']).to.equal(lenVictim.position);
    expect(cutLen['droppedOffsets']).to.have.length(2);
    // nothing destroyed: the cut bytes and the later segments are kept aside, byte for byte
    const kept = fs.readdirSync(partDir('crc')).filter((n) => n.includes('.log.corrupt-'));
    expect(kept.length).to.equal(crcSegs.length - 1);
    expect(kept.reduce((n, k) => n + fs.statSync(path.join(partDir('crc'), k)).size, 0)).to.equal(droppedCrc);
    // appends continue at the cut, and the same offsets keep their values
    await producer.send({ topic: 'crc', acks: -1, messages: [{ value: Buffer.from('after') }] });
    await stop('SIGTERM');
    for (const [topic, end] of [
      ['crc', victim.baseOffset + 1n],
      ['len', lenVictim.baseOffset],
    ] as const) {
      const scan = scanPartitionDir(partDir(topic));
      expect(scan.problems, topic).to.deep.equal([]);
      expect(scan.nextOffset, topic).to.equal(end);
    }
  });

  it('clean stop, then a flipped byte mid-segment: the fetch of the bad batch gets CORRUPT_MESSAGE, produces KAFKA_STORAGE_ERROR; the next start repairs the log', async () => {
    await start();
    const sent = await write('clean');
    await stop('SIGTERM');
    const segs = segmentLogs(partDir('clean'));
    const victim = entriesOf(segs[1] as string)[1] as Entry;
    flipByte(segs[1] as string, victim.position + victim.size - 50);
    await start();
    // the log is served from its summary: no load check sees the damage; the read path does
    await expectServed('clean', sent, victim.baseOffset);
    expect(await failure(read('clean', victim.baseOffset, victim.baseOffset + 1n))).to.equal('CORRUPT_MESSAGE');
    // past the bad batch too: nothing after it is served
    expect(await failure(read('clean', BigInt(sent.length - 1), BigInt(sent.length)))).to.equal('CORRUPT_MESSAGE');
    const logged = await line(
      broker,
      'a read met a corrupt entry: fetches from this offset get CORRUPT_MESSAGE and appends KAFKA_STORAGE_ERROR; the next start truncates the log there, keeping the rest aside',
    );
    expect(logged['offset']).to.equal(victim.baseOffset.toString());
    expect(lines(broker).filter((l) => l.msg === logged.msg)).to.have.length(1);
    expect(await failure(producer.send({ topic: 'clean', acks: -1, messages: [{ value: Buffer.from('x') }] }))).to.equal(
      'KAFKA_STORAGE_ERROR',
    );
    // librdkafka (kcat) from the start: every record before the bad batch, then the fetch error
    // (librdkafka names error 2 "Invalid message"), never a record at or after it
    const k = await runKcat(['-C', '-b', broker.bootstrap, '-t', 'clean', '-o', 'beginning', '-e', '-f', KCAT_FORMAT], '', 30_000);
    const kRecords = parseKcatOutput(k.stdout);
    expect(kRecords.map((r) => r.offset)).to.deep.equal(Array.from({ length: Number(victim.baseOffset) }, (_, i) => i));
    expect(kRecords.every((r, i) => r.value?.equals(sent[i] as Buffer))).to.equal(true);
    expect(k.stderr).to.include('Broker: Invalid message');
    await stop('SIGTERM');
    await start();
    expect(await endOffset('clean')).to.equal(victim.baseOffset);
    await expectServed('clean', sent, victim.baseOffset);
    await line(broker, 'truncating log at an invalid entry, and the segments after it');
    await producer.send({ topic: 'clean', acks: -1, messages: [{ value: Buffer.from('again') }] });
    await stop('SIGTERM');
    const scan = scanPartitionDir(partDir('clean'));
    expect(scan.problems).to.deep.equal([]);
    expect(scan.nextOffset).to.equal(victim.baseOffset + 1n);
    expect(fs.existsSync(path.join(partDir('clean'), 'gregor-repair-marker'))).to.equal(false);
  });

  it('kill -9 after the recovery point passed the first segments: they are not re-validated, a bad batch there is refused by the read path; a bad batch past it is cut at load', async () => {
    await start({ 'log.flush.offset.checkpoint.interval.ms': '100' });
    const sent = await write('rp');
    const segs = segmentLogs(partDir('rp'));
    const activeBase = BigInt(path.basename(segs[segs.length - 1] as string).slice(0, 20));
    // the rolls fsynced every segment below the active one; the checkpoint says so within 100 ms
    const cp = path.join(dataDir, 'recovery-point-offset-checkpoint');
    for (let i = 0; i < 200; i++) {
      if (fs.existsSync(cp) && fs.readFileSync(cp, 'utf8').includes(`rp 0 ${activeBase}\n`)) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    expect(fs.readFileSync(cp, 'utf8')).to.include(`rp 0 ${activeBase}\n`);
    await stop('SIGKILL');
    // below the recovery point: a batch before the first segment's last index entry
    const early = entriesOf(segs[0] as string)[1] as Entry;
    flipByte(segs[0] as string, early.position + early.size - 50);
    // past it: a batch in the active segment
    const late = entriesOf(segs[segs.length - 1] as string).at(-2) as Entry;
    flipByte(segs[segs.length - 1] as string, late.position + late.size - 50);
    await start();
    expect(await endOffset('rp')).to.equal(late.baseOffset);
    const cut = await line(broker, 'truncating log tail', (l) => l['dir'] === partDir('rp'));
    expect(cut['beforeRecoveryPoint']).to.equal(false);
    await expectServed('rp', sent, early.baseOffset);
    expect(await failure(read('rp', early.baseOffset, early.baseOffset + 1n))).to.equal('CORRUPT_MESSAGE');
    await stop('SIGTERM');
  });

  it('truncated and deleted .index / .timeindex files are rebuilt at load; reads and timestamp lookups are right', async () => {
    await start();
    const sent = await write('idx');
    await stop('SIGTERM');
    const segs = segmentLogs(partDir('idx'));
    const idx = (f: string, ext: string): string => f.replace(/\.log$/, ext);
    fs.rmSync(idx(segs[0] as string, '.index'));
    fs.rmSync(idx(segs[1] as string, '.timeindex'));
    const third = idx(segs[2] as string, '.index');
    fs.truncateSync(third, Math.max(0, fs.statSync(third).size - 3));
    await start();
    await expectServed('idx', sent, BigInt(sent.length));
    await line(broker, 'rebuilding missing or invalid index', (l) => l['segment'] === '0');
    const kafka = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    const got = await read('idx', 0n, BigInt(sent.length));
    const mid = got[Math.floor(got.length / 2)] as KjsMessage;
    const byTime = await admin.fetchTopicOffsetsByTimestamp('idx', Number(mid.timestamp));
    await admin.disconnect();
    // the first record with a timestamp at or after mid's
    const firstAt = got.find((m) => BigInt(m.timestamp) >= BigInt(mid.timestamp)) as KjsMessage;
    expect(byTime[0]?.offset).to.equal(firstAt.offset);
    await stop('SIGTERM');
    for (const f of segs.slice(0, 3)) {
      expect(fs.existsSync(idx(f, '.index')), f).to.equal(true);
      expect(fs.existsSync(idx(f, '.timeindex')), f).to.equal(true);
    }
    expect(fs.statSync(third).size % 8).to.equal(0);
    expect(scanPartitionDir(partDir('idx')).problems).to.deep.equal([]);
  });

  for (const how of ['SIGTERM', 'SIGKILL'] as const) {
    it(`every checkpoint garbled after a ${how === 'SIGTERM' ? 'clean stop' : 'kill -9'}: each is treated as absent and logged; the broker starts and serves every record`, async () => {
      await start({ 'log.flush.offset.checkpoint.interval.ms': '100' });
      const sent = await write('cp');
      await new Promise((r) => setTimeout(r, 300));
      await stop(how);
      const garbage = '0\n2\ncp 0 not-a-number\n\u0000\u00ff garbled\n';
      const files = [
        path.join(dataDir, 'recovery-point-offset-checkpoint'),
        path.join(dataDir, 'replication-offset-checkpoint'),
        path.join(dataDir, 'cleaner-offset-checkpoint'),
        path.join(dataDir, 'partition-summary-checkpoint'),
        path.join(partDir('cp'), 'log-start-offset-checkpoint'),
        path.join(partDir('cp'), 'leader-epoch-checkpoint'),
      ];
      for (const f of files) fs.writeFileSync(f, garbage);
      await start();
      await expectServed('cp', sent, BigInt(sent.length));
      expect(await endOffset('cp')).to.equal(BigInt(sent.length));
      const warned = (): string[] =>
        lines(broker)
          .filter((l) => typeof l.msg === 'string' && /unreadable/.test(l.msg))
          .map((l) => l.msg as string);
      for (const name of [
        'recovery-point-offset-checkpoint',
        'partition summary checkpoint',
        'log-start-offset-checkpoint',
        'leader-epoch-checkpoint',
        'cleaner-offset-checkpoint',
      ]) {
        for (let i = 0; i < 200 && !warned().some((m) => m.includes(name)); i++) await new Promise((r) => setTimeout(r, 25));
        expect(
          warned().some((m) => m.includes(name)),
          `${name} in ${warned().join(' | ')}`,
        ).to.equal(true);
      }
      await producer.send({ topic: 'cp', acks: -1, messages: [{ value: Buffer.from('more') }] });
      await stop('SIGTERM');
      const scan = scanPartitionDir(partDir('cp'));
      expect(scan.problems).to.deep.equal([]);
      expect(scan.nextOffset).to.equal(BigInt(sent.length + 1));
      // the broker wrote them again, readable
      expect(fs.readFileSync(path.join(dataDir, 'recovery-point-offset-checkpoint'), 'utf8')).to.match(/^0\n\d+\n/);
    });
  }

  it('a garbled meta.properties stops the start with a GREGOR_ERR_LOG_DIR_IDENTITY message naming the file; restoring it starts the broker', async () => {
    await start();
    const sent = await write('meta');
    await stop('SIGTERM');
    const file = path.join(dataDir, 'meta.properties');
    const good = fs.readFileSync(file);
    const bad = Buffer.from(good);
    for (let i = 10; i < bad.length; i += 7) bad[i] = (bad[i] as number) ^ 0x80;
    fs.writeFileSync(file, bad);
    const r = spawnSync(
      process.execPath,
      [path.join(PROJECT_ROOT, 'bin/gregor.js'), 'start', '--data-dir', dataDir, '--port', '0', '--override', 'admin.listener=none'],
      {
        encoding: 'utf8',
        timeout: 30_000,
      },
    );
    expect(r.status, r.stdout + r.stderr)
      .to.be.a('number')
      .and.not.equal(0);
    expect(r.stdout + r.stderr).to.include(`GREGOR_ERR_LOG_DIR_IDENTITY: ${file}`);
    expect(r.stdout).to.not.match(/^GREGOR_READY /m);
    expect(fs.readFileSync(file).equals(bad)).to.equal(true);
    fs.writeFileSync(file, good);
    await start();
    await expectServed('meta', sent, BigInt(sent.length));
    await stop('SIGTERM');
  });
});
