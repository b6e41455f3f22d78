#!/usr/bin/env node
// Captures golden Kafka frames with gregor itself as the broker (admin APIs and the flexible
// KIP-482 versions the librdkafka 2.0.2 mock cannot serve) into
// test/fixtures/frames/gregor-<client>/frames.json, same format as capture-all.mjs.
//
//   npx tsc -p tsconfig.json && node scripts/capture/capture-gregor.mjs [scenario ...]
//   scenarios: gregor-kafkajs gregor-confluent      (default: both)
//
// For each scenario: start the recording relay (relay.mjs) on a random port, start a fresh gregor
// (`node bin/gregor.js start`, empty temp data dir, advertised.listeners = the relay's address, so
// clients reconnect through the relay without any rewriting: the recorded responses are gregor's
// bytes unchanged), run the driver (it creates its topics itself), deduplicate (common.mjs) and write
// the fixture. Needs dist/ built and scripts/setup-test-deps.sh done (confluent client).
import { spawn, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startRelay } from './relay.mjs';
import { CODEC_IDS, makeBatches, dedupe, pairsOf, fmtPairs } from './common.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');
const OUT_DIR = path.join(ROOT, 'test/fixtures/frames');
const TMP = path.join(ROOT, '.tmp/capture');
const DRIVER_TIMEOUT_MS = 45_000;
const TOPIC = 'golden';
const CONFLUENT_DIR = path.join(ROOT, 'compat/clients/confluent');
const log = (s) => console.error(`capture-gregor: ${s}`);

// gregor's own request decoder (dist/) reads the Produce requests, flexible versions included.
const { decodeRequest } = await import(pathToFileURL(path.join(ROOT, 'dist/protocol/frame.js')).href);

const pkgVersion = (dir, name) => JSON.parse(readFileSync(path.join(dir, 'node_modules', name, 'package.json'), 'utf8')).version;

const SCENARIOS = {
  'gregor-kafkajs': {
    version: () => `kafkajs ${pkgVersion(ROOT, 'kafkajs')}`,
    plan: () => ({ batches: makeBatches('kafkajs', ['none', 'gzip'], { acks: [1, -1] }) }),
    driver: 'drivers/gregor-kafkajs.mjs',
  },
  'gregor-confluent': {
    version: () => {
      const v = execFileSync(
        process.execPath,
        ['-e', "process.stdout.write(require('@confluentinc/kafka-javascript').librdkafkaVersion)"],
        { cwd: CONFLUENT_DIR, encoding: 'utf8' },
      );
      return `@confluentinc/kafka-javascript ${pkgVersion(CONFLUENT_DIR, '@confluentinc/kafka-javascript')} (librdkafka ${v})`;
    },
    plan: () => ({ batches: makeBatches('confluent', ['none', 'gzip', 'snappy', 'lz4', 'zstd'], { acks: [-1] }) }),
    driver: 'drivers/gregor-confluent.mjs',
  },
};

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function waitForPort(port, ms) {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const ok = await new Promise((resolve) => {
      const c = net.connect({ host: '127.0.0.1', port }, () => {
        c.destroy();
        resolve(true);
      });
      c.on('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`gregor did not listen on ${port}`);
}

function run(cmd, args, env, deadlineMs) {
  return new Promise((resolve) => {
    const started = Date.now();
    const proc = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let stderr = '';
    proc.stdout.on('data', () => {});
    proc.stderr.on('data', (d) => (stderr += d));
    const killer = setTimeout(() => {
      try {
        process.kill(-proc.pid, 'SIGKILL');
      } catch {
        // the process group is already gone
      }
    }, deadlineMs);
    proc.on('close', (code, signal) => {
      clearTimeout(killer);
      resolve({ code, signal, stderr: stderr.trim(), ms: Date.now() - started });
    });
  });
}

function inspectProduce(buf) {
  try {
    const body = decodeRequest(buf).body;
    const entries = [];
    for (const td of body.topicData) {
      for (const pd of td.partitionData) {
        const set = pd.records;
        let codec = 'unknown';
        if (set && set.length > 22 && set.readInt8(16) === 2) codec = CODEC_IDS[set.readInt16BE(21) & 7] ?? 'unknown';
        entries.push({ topic: td.name, partition: pd.index, codec });
      }
    }
    return { acks: body.acks, entries };
  } catch (e) {
    log(`cannot decode Produce request: ${e.message}`);
    return null;
  }
}

async function capture(name, commit) {
  const sc = SCENARIOS[name];
  const t0 = Date.now();
  const plan = { topic: TOPIC, groupId: `gregor-capture-${name}`, ...sc.plan() };
  mkdirSync(TMP, { recursive: true });
  const planFile = path.join(TMP, `${name}.plan.json`);
  writeFileSync(planFile, JSON.stringify(plan, null, 2));

  const brokerPort = await freePort();
  const relay = await startRelay({ upstream: `127.0.0.1:${brokerPort}`, log });
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'gregor-capture-'));
  const gregor = spawn(
    process.execPath,
    [
      path.join(ROOT, 'bin/gregor.js'),
      'start',
      '--data-dir',
      dataDir,
      '--port',
      String(brokerPort),
      '--override',
      'group.initial.rebalance.delay.ms=0',
      '--override',
      `advertised.listeners=PLAINTEXT://127.0.0.1:${relay.port}`,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let gregorErr = '';
  gregor.stderr.on('data', (d) => (gregorErr += d));
  const problems = [];
  try {
    await waitForPort(brokerPort, 10_000);
    const env = { CAPTURE_BOOTSTRAP: relay.bootstrap, CAPTURE_PLAN: planFile, CAPTURE_DRIVER_TIMEOUT_MS: String(DRIVER_TIMEOUT_MS - 2000) };
    const r = await run(process.execPath, [path.join(HERE, sc.driver)], env, DRIVER_TIMEOUT_MS);
    if (r.code !== 0)
      problems.push(`${sc.driver}: exit ${r.code ?? r.signal} after ${r.ms} ms: ${r.stderr.split('\n').slice(-3).join(' | ')}`);
    else if (r.stderr) log(`${name}: ${r.stderr.split('\n').slice(-6).join(' | ')}`);
    await new Promise((res) => setTimeout(res, 300));
  } finally {
    await relay.close();
    gregor.kill('SIGTERM');
    await new Promise((res) => gregor.once('close', res));
    rmSync(dataDir, { recursive: true, force: true });
  }
  if (gregorErr.trim()) log(`${name}: gregor stderr: ${gregorErr.trim().split('\n').slice(-5).join(' | ')}`);

  const all = relay.frames;
  for (const f of all) if (f.direction === 'request' && f.apiKey === 0) f.produce = inspectProduce(f.bytes);
  const kept = dedupe(all);
  const produceReqs = kept.filter((f) => f.produce);
  const batches = plan.batches.map((b) => ({
    codec: b.codec,
    acks: b.acks,
    topic: plan.topic,
    partition: b.partition,
    requestSeqs: produceReqs
      .filter(
        (f) =>
          f.produce.acks === b.acks &&
          f.produce.entries.some((e) => e.topic === plan.topic && e.partition === b.partition && e.codec === b.codec),
      )
      .map((f) => f.seq),
    records: b.records,
  }));
  for (const b of batches)
    if (b.requestSeqs.length === 0) problems.push(`no Produce request captured for ${b.codec} acks=${b.acks} p${b.partition}`);

  const fixture = {
    client: name,
    clientVersion: sc.version(),
    broker: `gregor ${commit} (node bin/gregor.js start, fresh data dir) behind scripts/capture/relay.mjs`,
    capturedAt: new Date().toISOString().slice(0, 10),
    sent: { topic: plan.topic, groupId: plan.groupId, batches },
    problems,
    frames: kept.map((f) => ({
      seq: f.seq,
      direction: f.direction,
      apiKey: f.apiKey,
      apiVersion: f.apiVersion,
      correlationId: f.correlationId,
      connection: f.connection,
      hex: f.bytes.toString('hex'),
    })),
  };
  const dir = path.join(OUT_DIR, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'frames.json'), JSON.stringify(fixture, null, 1) + '\n');
  log(
    `${name}: ${all.length} frames recorded, ${kept.length} kept, ${Date.now() - t0} ms` +
      (problems.length ? `\n  problems:\n    ${problems.join('\n    ')}` : ''),
  );
  return { name, clientVersion: fixture.clientVersion, requests: pairsOf(kept, 'request'), responses: pairsOf(kept, 'response') };
}

const wanted = process.argv.slice(2);
for (const w of wanted) if (!SCENARIOS[w]) throw new Error(`unknown scenario ${w}; known: ${Object.keys(SCENARIOS).join(' ')}`);
const commit = execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
const summaries = [];
for (const name of wanted.length ? wanted : Object.keys(SCENARIOS)) summaries.push(await capture(name, commit));
console.log('\n| scenario | client | requests (apiKey vN) | responses |\n|---|---|---|---|');
for (const s of summaries) console.log(`| ${s.name} | ${s.clientVersion} | ${fmtPairs(s.requests)} | ${fmtPairs(s.responses)} |`);
