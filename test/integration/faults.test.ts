/**
 * Faults with a real child broker: kill -9 while a kafkajs producer (acks=1) runs, restart on the same
 * data dir and port, and every acknowledged record is at its acknowledged offset (three kills, so
 * records acknowledged before earlier kills must survive later ones unchanged); a segment torn
 * mid-batch with garbage after it recovers to the last whole batch; SIGTERM shuts down cleanly (exit
 * 0, clean-shutdown marker) and the next start does not recover anything.
 */
import { expect } from 'chai';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync, rmSync, statSync, truncateSync, appendFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { buildRecordBatch, decodeRecords } from '../../protocol/records/index.js';
import { tempDir } from '../helpers/broker.js';
import { KafkajsPartitionReader } from '../helpers/kafkajs-reader.js';
import { PROJECT_ROOT } from '../helpers/project.js';
import { RawClient, rawCreateTopics, rawFetch, rawListOffset, rawProduce } from '../helpers/raw-client.js';

const require = createRequire(import.meta.url);
const { Kafka, logLevel } = require('kafkajs') as typeof import('kafkajs');

const CLEAN_MARKER = '.gregor-clean-shutdown';

/** A child broker whose whole stdout (pino JSON lines) is kept, from the first line. */
interface LoggedBroker {
  child: ChildProcess;
  bootstrap: string;
  port: number;
  exited: Promise<number | null>;
  logs: () => { msg?: string; level?: number; [k: string]: unknown }[];
}

async function startLogged(dataDir: string, port: number, overrides: Record<string, string> = {}): Promise<LoggedBroker> {
  const args = [join(PROJECT_ROOT, 'bin/gregor.js'), 'start', '--data-dir', dataDir, '--port', String(port)];
  for (const [k, v] of Object.entries(overrides)) args.push('--override', `${k}=${v}`);
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LOG_LEVEL: 'info' } });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const bootstrap = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`broker did not start:\n${out}`)), 20000);
    const check = () => {
      const m = /"bootstrap":"([^"]+)"/.exec(out);
      if (m?.[1] !== undefined) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    child.stdout.on('data', check);
    child.on('exit', (code) => reject(new Error(`broker exited with ${code}:\n${out}`)));
  });
  const logs = () =>
    out
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => {
        try {
          return JSON.parse(l) as { msg?: string };
        } catch {
          return {};
        }
      });
  return { child, bootstrap, port: Number(bootstrap.split(':').pop()), exited, logs };
}

async function kill9(b: LoggedBroker): Promise<void> {
  b.child.kill('SIGKILL');
  expect(await b.exited).to.equal(null);
}

/** Restarts on the same port; a just-killed listener's port can take a moment to be free again. */
async function restart(dataDir: string, port: number, overrides: Record<string, string> = {}): Promise<LoggedBroker> {
  let last: unknown;
  for (let i = 0; i < 20; i++) {
    try {
      return await startLogged(dataDir, port, overrides);
    } catch (e) {
      last = e;
      if (!String(e).includes('EADDRINUSE')) throw e;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  throw last;
}

interface Acked {
  partition: number;
  offset: bigint;
  key: string;
  value: string;
}

describe('faults: kill -9 and torn segments (child broker)', function () {
  this.timeout(150_000);
  const dirs: string[] = [];
  const brokers: LoggedBroker[] = [];
  after(() => {
    for (const b of brokers) if (b.child.exitCode === null && b.child.signalCode === null) b.child.kill('SIGKILL');
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('kill -9 under an acks=1 producer, three times: every acknowledged record stays at its offset; offsets contiguous and continuing', async () => {
    const TOPIC = 'durable';
    const PARTITIONS = 3;
    const dataDir = tempDir('gregor-kill9-');
    dirs.push(dataDir);
    let b = await startLogged(dataDir, 0);
    brokers.push(b);
    const port = b.port;
    const admin = await RawClient.connect(b.bootstrap);
    await rawCreateTopics(admin, [{ name: TOPIC, partitions: PARTITIONS }]);
    admin.destroy();

    const acked = new Map<string, Acked>(); // `${partition}:${offset}` → record
    let seq = 0;
    let prevEnds: bigint[] = Array.from({ length: PARTITIONS }, () => 0n);

    for (let round = 0; round < 3; round++) {
      const kafka = new Kafka({
        brokers: [b.bootstrap],
        clientId: `kill9-${round}`,
        logLevel: logLevel.NOTHING,
        retry: { retries: 0 },
        connectionTimeout: 2000,
        requestTimeout: 5000,
      });
      const producer = kafka.producer({ retry: { retries: 0 } });
      await producer.connect();
      let roundAcks = 0;
      let stop = false;
      const errors: unknown[] = [];
      // four concurrent senders, so the kill lands with requests in flight
      const loops = Array.from({ length: 4 }, async (_, loop) => {
        while (!stop) {
          const messages = Array.from({ length: 25 }, (_, i) => {
            const n = seq++;
            return { key: `r${round}-l${loop}-${n}`, value: `value-${n}-${'v'.repeat(n % 40)}`, partition: (n + i) % PARTITIONS };
          });
          let res;
          try {
            res = await producer.send({ topic: TOPIC, acks: 1, messages });
          } catch (e) {
            errors.push(e);
            return;
          }
          // kafkajs groups one send's messages by partition in order: the i-th message of partition p
          // in this send sits at that partition's baseOffset + i.
          for (const r of res) {
            expect(r.errorCode).to.equal(0);
            const mine = messages.filter((m) => m.partition === r.partition);
            mine.forEach((m, i) => {
              const offset = BigInt(r.baseOffset ?? '-1') + BigInt(i);
              const k = `${r.partition}:${offset}`;
              expect(acked.has(k), `offset ${k} acknowledged twice`).to.equal(false);
              acked.set(k, { partition: r.partition, offset, key: m.key, value: m.value });
              // offsets continue after a restart: never below the end seen at the previous verification
              expect(offset >= (prevEnds[r.partition] ?? 0n), `offset ${k} reused after restart`).to.equal(true);
            });
            roundAcks += mine.length;
          }
        }
      });
      const failures: unknown[] = [];
      const settled = Promise.all(loops.map((l) => l.catch((e: unknown) => void failures.push(e))));
      while (roundAcks < 2000 && failures.length === 0) await new Promise((r) => setTimeout(r, 5));
      await kill9(b);
      stop = true;
      await settled;
      if (failures.length > 0) throw failures[0];
      expect(errors.length, 'sends in flight when the broker died fail').to.be.at.least(1);
      await producer.disconnect().catch(() => undefined);

      b = await restart(dataDir, port);
      brokers.push(b);
      expect(b.logs().some((l) => l.msg === 'no clean-shutdown marker: logs will be recovered as they are opened')).to.equal(true);

      // read every partition from 0 to its end: contiguous offsets, every acknowledged record in place
      const c = await RawClient.connect(b.bootstrap);
      const ends: bigint[] = [];
      for (let p = 0; p < PARTITIONS; p++) ends.push(await rawListOffset(c, TOPIC, p));
      c.destroy();
      const reader = new KafkajsPartitionReader([b.bootstrap]);
      await reader.connect(TOPIC);
      let checked = 0;
      try {
        for (let p = 0; p < PARTITIONS; p++) {
          const end = ends[p]!;
          expect(end >= prevEnds[p]!, `partition ${p} end went back from ${prevEnds[p]} to ${end}`).to.equal(true);
          const msgs = await reader.readAll(TOPIC, p, 0n, end);
          expect(msgs.length).to.equal(Number(end));
          msgs.forEach((m, i) => expect(m.offset).to.equal(String(i)));
          for (const a of acked.values()) {
            if (a.partition !== p) continue;
            const m = msgs[Number(a.offset)];
            expect(m, `acknowledged ${p}:${a.offset} missing (end ${end})`).to.not.equal(undefined);
            expect(m?.key?.toString(), `key at ${p}:${a.offset}`).to.equal(a.key);
            expect(m?.value?.toString(), `value at ${p}:${a.offset}`).to.equal(a.value);
            checked++;
          }
        }
      } finally {
        await reader.disconnect();
      }
      expect(checked).to.equal(acked.size);
      prevEnds = ends;
    }
    expect(acked.size).to.be.at.least(6000);

    // and produce more after the last restart: offsets continue from the recovered ends
    const c = await RawClient.connect(b.bootstrap);
    const res = await rawProduce(c, TOPIC, [
      [0, buildRecordBatch([{ key: Buffer.from('after'), value: Buffer.from('x'), timestamp: BigInt(Date.now()) }])],
    ]);
    expect(res[0]?.errorCode).to.equal(0);
    expect(res[0]?.baseOffset).to.equal(prevEnds[0]);
    c.destroy();
    await kill9(b);
  });

  it('a segment torn mid-batch with garbage after it recovers to the last whole batch; SIGTERM is clean and needs no recovery', async () => {
    const TOPIC = 'torn';
    const BATCHES = 20;
    const PER_BATCH = 10;
    const dataDir = tempDir('gregor-torn-');
    dirs.push(dataDir);
    let b = await startLogged(dataDir, 0);
    brokers.push(b);
    const port = b.port;
    let c = await RawClient.connect(b.bootstrap);
    await rawCreateTopics(c, [{ name: TOPIC, partitions: 1 }]);
    const sent: Buffer[] = [];
    const keyOf = (batchNo: number, i: number) => `b${batchNo}-r${i}`;
    for (let n = 0; n < BATCHES; n++) {
      const batch = buildRecordBatch(
        Array.from({ length: PER_BATCH }, (_, i) => ({
          key: Buffer.from(keyOf(n, i)),
          value: Buffer.alloc(50 + n, 65 + (i % 26)),
          timestamp: BigInt(Date.now()),
        })),
      );
      sent.push(batch);
      const res = await rawProduce(c, TOPIC, [[0, batch]]);
      expect(res[0]?.errorCode).to.equal(0);
      expect(res[0]?.baseOffset).to.equal(BigInt(n * PER_BATCH));
    }
    c.destroy();
    await kill9(b);

    // tear the last batch in half and append garbage
    const dir = join(dataDir, `${TOPIC}-0`);
    const logs = readdirSync(dir)
      .filter((n) => n.endsWith('.log'))
      .sort();
    const active = join(dir, logs[logs.length - 1]!);
    const size = statSync(active).size;
    const total = sent.reduce((a, x) => a + x.length, 0);
    expect(size).to.equal(total); // one segment holding exactly the batches as sent
    const last = sent[BATCHES - 1]!;
    const wholeEnd = size - last.length;
    truncateSync(active, wholeEnd + Math.floor(last.length / 2));
    appendFileSync(active, Buffer.from('garbage after a torn batch \x00\x01\x02\xff\xfe'));

    b = await restart(dataDir, port);
    brokers.push(b);
    // the log is recovered after ready, by its first use (here) or the background pass
    c = await RawClient.connect(b.bootstrap);
    const expectedEnd = BigInt((BATCHES - 1) * PER_BATCH);
    expect(await rawListOffset(c, TOPIC, 0)).to.equal(expectedEnd);
    // its log line may reach us after the answer (the child's stdout is another pipe)
    const truncLine = () => b.logs().find((l) => l.msg === 'truncating log tail') as { dropped?: number; position?: number } | undefined;
    let trunc = truncLine();
    for (let i = 0; i < 400 && trunc === undefined; i++) {
      await new Promise((r) => setTimeout(r, 25));
      trunc = truncLine();
    }
    expect(trunc, 'a "truncating log tail" log line').to.not.equal(undefined);
    expect(trunc?.position).to.equal(wholeEnd);
    expect(statSync(active).size).to.equal(wholeEnd);
    const readBack = async (until: bigint) => {
      const out: { offset: bigint; key: string }[] = [];
      let next = 0n;
      while (next < until) {
        const f = await rawFetch(c, TOPIC, 0, next);
        expect(f.errorCode).to.equal(0);
        const recs = decodeRecords(f.records ?? Buffer.alloc(0), { maxOutput: 1 << 24 }).records;
        if (recs.length === 0) throw new Error(`no records at ${next}`);
        for (const r of recs) if (r.offset >= next) out.push({ offset: r.offset, key: r.key?.toString() ?? '' });
        next = out[out.length - 1]!.offset + 1n;
      }
      return out;
    };
    const before = await readBack(expectedEnd);
    expect(before.length).to.equal(Number(expectedEnd));
    before.forEach((r, i) => {
      expect(r.offset).to.equal(BigInt(i));
      expect(r.key).to.equal(keyOf(Math.floor(i / PER_BATCH), i % PER_BATCH));
    });
    // new produces continue from the recovered end
    const more = buildRecordBatch(
      Array.from({ length: PER_BATCH }, (_, i) => ({
        key: Buffer.from(keyOf(99, i)),
        value: Buffer.from('after'),
        timestamp: BigInt(Date.now()),
      })),
    );
    const res = await rawProduce(c, TOPIC, [[0, more]]);
    expect(res[0]?.errorCode).to.equal(0);
    expect(res[0]?.baseOffset).to.equal(expectedEnd);
    c.destroy();

    // SIGTERM: exit 0, clean-shutdown marker written
    b.child.kill('SIGTERM');
    expect(await b.exited).to.equal(0);
    expect(existsSync(join(dataDir, CLEAN_MARKER)), 'clean-shutdown marker').to.equal(true);

    // a start after a clean shutdown recovers nothing and the data is intact
    b = await restart(dataDir, port);
    brokers.push(b);
    c = await RawClient.connect(b.bootstrap);
    const finalEnd = expectedEnd + BigInt(PER_BATCH);
    expect(await rawListOffset(c, TOPIC, 0)).to.equal(finalEnd);
    const after = await readBack(finalEnd);
    expect(after.length).to.equal(Number(finalEnd));
    expect(after.slice(Number(expectedEnd)).map((r) => r.key)).to.deep.equal(Array.from({ length: PER_BATCH }, (_, i) => keyOf(99, i)));
    c.destroy();
    const msgs = b.logs().map((l) => l.msg);
    expect(msgs).to.not.include('no clean-shutdown marker: logs will be recovered as they are opened');
    expect(msgs).to.not.include('truncating log tail');
    expect(msgs).to.not.include('log recovered');
    b.child.kill('SIGTERM');
    expect(await b.exited).to.equal(0);
  });
});
