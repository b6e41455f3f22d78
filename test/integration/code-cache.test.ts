/**
 * Issue 14, start-up: bin/gregor.js runs the bundled start path (dist/bundle/start.cjs) through
 * bin/load-broker.js with a V8 code cache. The first start writes the cache before its ready line,
 * later starts use it, and a cache that is stale (another bundle), damaged (V8 refuses it) or turned
 * off never stops a broker from starting and serving: it is compiled as usual and written again.
 * Each case uses its own cache file (GREGOR_CODE_CACHE=path); which cache a load used is read by
 * loading the bundle in a child process with the broker's own flags (none).
 */
import { expect } from 'chai';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { Cleanup } from '../helpers/cleanup.js';
import { kafkajsRoundTrip } from '../helpers/roundtrip.js';
import { tempDir } from '../helpers/broker.js';
import { PROJECT_ROOT } from '../helpers/project.js';

const BIN = join(PROJECT_ROOT, 'bin/gregor.js');
const LOADER = join(PROJECT_ROOT, 'bin/load-broker.js');

/** What loadBroker() reports for this environment: used | missing | refused | off. */
function cacheState(cacheFile: string): string {
  const r = spawnSync(process.execPath, ['-e', `console.log(require(${JSON.stringify(LOADER)}).loadBroker().cache)`], {
    env: { ...process.env, GREGOR_CODE_CACHE: cacheFile },
    encoding: 'utf8',
  });
  expect(r.status, r.stderr).to.equal(0);
  return r.stdout.trim();
}

interface Started {
  child: ChildProcess;
  bootstrap: string;
  admin: string;
}

function startGregor(cacheFile: string, dataDir: string): Promise<Started> {
  const child = spawn(process.execPath, [BIN, 'start', '--port', '0', '--data-dir', dataDir, '--override', 'admin.listener=127.0.0.1:0'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, LOG_LEVEL: 'warn', GREGOR_TOPICS: '', GREGOR_CODE_CACHE: cacheFile },
  });
  let out = '';
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no GREGOR_READY within 30 s\n${out}\n${err}`)), 30_000);
    child.once('exit', (code) => reject(new Error(`exited ${String(code)} before ready\n${out}\n${err}`)));
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const line = out.split('\n').find((l) => l.startsWith('GREGOR_READY '));
      if (line === undefined) return;
      clearTimeout(timer);
      const ready = JSON.parse(line.slice('GREGOR_READY '.length)) as { bootstrap: string; admin: string };
      resolve({ child, bootstrap: ready.bootstrap, admin: ready.admin });
    });
  });
}

async function stopGregor(s: Started): Promise<void> {
  if (s.child.exitCode !== null || s.child.signalCode !== null) return;
  const exited = new Promise((r) => s.child.once('exit', r));
  s.child.kill('SIGTERM');
  await exited;
}

/** A kafkajs round trip: the broker that loaded this way serves. */
function roundTrip(bootstrap: string, topic: string): Promise<string[]> {
  return kafkajsRoundTrip(new Kafka({ brokers: [bootstrap], logLevel: logLevel.NOTHING }), topic, ['one', 'two']);
}

describe('gregor start: the start path loads from a V8 code cache', function () {
  this.timeout(90_000);
  const cleanup = new Cleanup();
  afterEach(() => cleanup.run());

  it('the first start writes the cache before its ready line, the next one uses it and serves kafkajs', async () => {
    const dir = cleanup.add(tempDir('cc-'), (d) => rmSync(d, { recursive: true, force: true }));
    const cacheFile = join(dir, 'start.cache');
    expect(cacheState(cacheFile)).to.equal('missing');
    const first = cleanup.add(await startGregor(cacheFile, join(dir, 'data1')), stopGregor);
    // there when the ready line is: a harness may kill the broker as soon as it reads it
    expect(existsSync(cacheFile)).to.equal(true);
    const header = readFileSync(cacheFile).subarray(0, 200).toString('latin1').split('\n')[0] ?? '';
    expect(header.split(' ').slice(0, 3)).to.deep.equal(['gregor-code-cache/1', process.version, process.arch]);
    await stopGregor(first);
    expect(cacheState(cacheFile)).to.equal('used');

    const written = statSync(cacheFile).mtimeMs;
    const second = cleanup.add(await startGregor(cacheFile, join(dir, 'data2')), stopGregor);
    expect(await roundTrip(second.bootstrap, 'cc-used')).to.deep.equal(['one', 'two']);
    // the bundle carries prom-client in parts (scripts/bundle.mjs): its registry, metric types and
    // default metrics serve /metrics, with the produce just counted
    const metrics = await (await fetch(`http://${second.admin}/metrics`)).text();
    expect(metrics).to.match(/^process_cpu_seconds_total \d/m);
    expect(metrics).to.match(/^nodejs_eventloop_lag_seconds \d/m);
    expect(metrics).to.match(/^kafka_server_brokertopicmetrics_messagesin_total 2$/m);
    // a used cache is left alone (a missing or refused one is written again, as the next cases show)
    expect(statSync(cacheFile).mtimeMs).to.equal(written);
  });

  /** A broker started once with a cache file of its own: the cache it wrote and where its header ends. */
  async function firstStart(): Promise<{ dir: string; cacheFile: string; good: Buffer; eol: number }> {
    const dir = cleanup.add(tempDir('cc-'), (d) => rmSync(d, { recursive: true, force: true }));
    const cacheFile = join(dir, 'start.cache');
    await stopGregor(await startGregor(cacheFile, join(dir, 'data1')));
    expect(existsSync(cacheFile)).to.equal(true);
    const good = readFileSync(cacheFile);
    return { dir, cacheFile, good, eol: good.indexOf(0x0a) };
  }

  it('a damaged cache is refused by V8, the broker starts and serves anyway and writes a good one', async () => {
    const { dir, cacheFile, good, eol } = await firstStart();
    // same header, the data after it flipped
    const damaged = Buffer.from(good);
    for (let i = eol + 1; i < damaged.length; i += 7) damaged[i] = (damaged[i] ?? 0) ^ 0x5a;
    writeFileSync(cacheFile, damaged);
    expect(cacheState(cacheFile)).to.equal('refused');

    const s = cleanup.add(await startGregor(cacheFile, join(dir, 'data2')), stopGregor);
    expect(await roundTrip(s.bootstrap, 'cc-refused')).to.deep.equal(['one', 'two']);
    expect(readFileSync(cacheFile).equals(damaged)).to.equal(false);
    expect(cacheState(cacheFile)).to.equal('used');
  });

  it('a cache made from another bundle (header differs) is not given to V8 and is replaced; GREGOR_CODE_CACHE=0 turns it off', async () => {
    const { dir, cacheFile, good, eol } = await firstStart();
    const fields = good.subarray(0, eol).toString('latin1').split(' ');
    fields[3] = String(Number(fields[3]) + 1); // the bundle's size
    const stale = Buffer.concat([Buffer.from(fields.join(' '), 'latin1'), good.subarray(eol)]);
    writeFileSync(cacheFile, stale);
    expect(cacheState(cacheFile)).to.equal('missing');
    const s = cleanup.add(await startGregor(cacheFile, join(dir, 'data2')), stopGregor);
    expect(readFileSync(cacheFile).equals(stale)).to.equal(false);
    expect(cacheState(cacheFile)).to.equal('used');
    await stopGregor(s);

    expect(cacheState('0')).to.equal('off');
    const off = cleanup.add(await startGregor('0', join(dir, 'data3')), stopGregor);
    expect(await roundTrip(off.bootstrap, 'cc-off')).to.deep.equal(['one', 'two']);
    expect(existsSync(join(PROJECT_ROOT, '0'))).to.equal(false);
  });
});
