#!/usr/bin/env node
// Captures golden Kafka frames from real clients into test/fixtures/frames/<scenario>/frames.json.
//
//   node scripts/capture/capture-all.mjs [scenario ...]      (default: all scenarios)
//   scenarios: kafkajs confluent kcat kafka-python-auto kafka-python-0.10
//
// For each scenario: compile + start a fresh librdkafka 2.0.2 mock cluster (mock-broker.c, topic
// "golden" with 3 partitions), start the recording relay (relay.mjs) in front of it, run the
// client driver against the relay (bounded to DRIVER_TIMEOUT_MS), then deduplicate the recorded
// frames and write the fixture. See test/fixtures/README.md for the fixture format.
// Needs: scripts/setup-test-deps.sh done (kcat, python3-kafka, librdkafka-dev, confluent client).
import { spawn, execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync, readFileSync, existsSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { startRelay } from './relay.mjs';
import { CODEC_IDS, makeBatches, dedupe, pairsOf, fmtPairs } from './common.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');
const OUT_DIR = path.join(ROOT, 'test/fixtures/frames');
const TMP = path.join(ROOT, '.tmp/capture');
const DRIVER_TIMEOUT_MS = 20_000;
const TOPIC = 'golden';
const SYSTEM_PYTHON = '/usr/bin/python3';

const log = (s) => console.error(`capture: ${s}`);

function pkgVersion(dir, name) {
  return JSON.parse(readFileSync(path.join(dir, 'node_modules', name, 'package.json'), 'utf8')).version;
}

function tryExec(cmd, args, cwd) {
  try {
    return execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
  } catch (e) {
    return `${e.stdout ?? ''}${e.stderr ?? ''}`.trim();
  }
}

const CONFLUENT_DIR = path.join(ROOT, 'compat/clients/confluent');

const SCENARIOS = {
  kafkajs: {
    version: () => `kafkajs ${pkgVersion(ROOT, 'kafkajs')}`,
    plan: () => ({ batches: makeBatches('kafkajs', ['none', 'gzip'], { acks: [1, -1] }) }),
    run: (env) => [[process.execPath, [path.join(HERE, 'drivers/kafkajs.mjs')], env]],
  },
  confluent: {
    version: () =>
      `@confluentinc/kafka-javascript ${pkgVersion(CONFLUENT_DIR, '@confluentinc/kafka-javascript')} (librdkafka ` +
      tryExec(
        process.execPath,
        ['-e', "process.stdout.write(require('@confluentinc/kafka-javascript').librdkafkaVersion)"],
        CONFLUENT_DIR,
      ) +
      ')',
    plan: () => ({ batches: makeBatches('confluent', ['none', 'gzip', 'snappy', 'lz4', 'zstd'], { acks: [-1] }) }),
    run: (env) => [[process.execPath, [path.join(HERE, 'drivers/confluent.mjs')], env]],
  },
  kcat: {
    version: () => {
      const m = /Version (\S+) .*librdkafka (\S+)/.exec(tryExec('kcat', ['-V']));
      return m ? `kcat ${m[1]} (librdkafka ${m[2]})` : 'kcat (unknown version)';
    },
    plan: () => ({
      batches: makeBatches('kcat', ['none', 'gzip', 'snappy', 'lz4', 'zstd'], { acks: [-1], nullKey: false, kcatHeaders: true }),
    }),
    run: (env, plan) => kcatSteps(env, plan),
  },
  'kafka-python-auto': {
    version: () => `kafka-python ${tryExec(SYSTEM_PYTHON, ['-c', 'import kafka; print(kafka.__version__)'])} (api_version=None: probed)`,
    plan: () => ({ batches: makeBatches('kafka-python', ['none', 'gzip', 'snappy', 'lz4', 'zstd'], { acks: [1] }) }),
    run: (env) => [[SYSTEM_PYTHON, [path.join(HERE, 'drivers/kafka_python.py')], { ...env, CAPTURE_API_VERSION: 'auto' }]],
  },
  'kafka-python-0.10': {
    version: () => `kafka-python ${tryExec(SYSTEM_PYTHON, ['-c', 'import kafka; print(kafka.__version__)'])} (api_version=(0,10,0))`,
    plan: () => ({
      batches: makeBatches('kafka-python', ['none', 'gzip', 'snappy', 'lz4'], { acks: [1], headers: false }),
    }),
    run: (env) => [[SYSTEM_PYTHON, [path.join(HERE, 'drivers/kafka_python.py')], { ...env, CAPTURE_API_VERSION: '0.10.0' }]],
  },
};

function kcatSteps(env, plan) {
  const b = env.CAPTURE_BOOTSTRAP;
  const common = ['-b', b, '-X', 'client.id=gregor-capture-kcat', '-q'];
  const steps = [['kcat', [...common, '-L'], env]];
  for (const batch of plan.batches) {
    const args = [
      ...common,
      '-P',
      '-t',
      plan.topic,
      '-p',
      String(batch.partition),
      '-z',
      batch.codec,
      '-K',
      '|',
      '-X',
      `acks=${batch.acks}`,
    ];
    for (const h of batch.records[0].headers) args.push('-H', `${h.key}=${h.value}`);
    const input = batch.records.map((r) => `${r.key}|${r.value}\n`).join('');
    steps.push(['kcat', args, env, input]);
  }
  steps.push(['kcat', [...common, '-C', '-t', plan.topic, '-o', 'beginning', '-e'], env]);
  steps.push(['kcat', [...common, '-Q', '-t', `${plan.topic}:0:${Date.now() - 3_600_000}`], env]);
  steps.push([
    'kcat',
    [...common, '-X', 'auto.offset.reset=earliest', '-X', 'heartbeat.interval.ms=500', '-G', plan.groupId, plan.topic, '-e'],
    env,
  ]);
  return steps;
}

// ---------------------------------------------------------------------------------------------
function ensureMockBinary() {
  mkdirSync(TMP, { recursive: true });
  const src = path.join(HERE, 'mock-broker.c');
  const bin = path.join(TMP, 'mock-broker');
  if (!existsSync(bin) || statSync(bin).mtimeMs < statSync(src).mtimeMs) {
    log('compiling mock-broker.c');
    execFileSync('gcc', ['-O1', '-Wall', '-o', bin, src, '-lrdkafka'], { stdio: 'inherit' });
  }
  return bin;
}

function startMock(bin) {
  return new Promise((resolve, reject) => {
    const proc = spawn(bin, [`${TOPIC}:3`], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    const timer = setTimeout(() => reject(new Error('mock-broker did not start')), 5000);
    proc.on('error', reject);
    proc.stdout.on('data', (d) => {
      out += d;
      const line = out.split('\n')[0];
      if (out.includes('\n')) {
        clearTimeout(timer);
        resolve({ proc, bootstrap: line.trim().split(',')[0] });
      }
    });
  });
}

function runStep([cmd, args, env, input], deadlineMs) {
  return new Promise((resolve) => {
    const started = Date.now();
    const proc = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    let stderr = '';
    proc.stdout.on('data', () => {});
    proc.stderr.on('data', (d) => (stderr += d));
    proc.stdin.on('error', () => {});
    proc.stdin.end(input ?? '');
    const killer = setTimeout(
      () => {
        try {
          process.kill(-proc.pid, 'SIGKILL');
        } catch {
          // the process group is already gone
        }
      },
      Math.max(500, deadlineMs),
    );
    proc.on('close', (code, signal) => {
      clearTimeout(killer);
      resolve({ code, signal, stderr: stderr.trim(), ms: Date.now() - started });
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Minimal Produce request inspection (non-flexible v0-v8 only: all the mock accepts is v0-v7):
// acks + per partition the record-set magic and codec, to link frames to the plan.
function inspectProduce(buf, apiVersion) {
  if (apiVersion >= 9) return null;
  let o = 8;
  const str = () => {
    const n = buf.readInt16BE(o);
    o += 2;
    if (n < 0) return null;
    const s = buf.toString('utf8', o, o + n);
    o += n;
    return s;
  };
  str(); // client id
  if (apiVersion >= 3) str(); // transactional id
  const acks = buf.readInt16BE(o);
  o += 2 + 4; // acks, timeout
  const entries = [];
  const nTopics = buf.readInt32BE(o);
  o += 4;
  for (let t = 0; t < nTopics; t++) {
    const topic = str();
    const nParts = buf.readInt32BE(o);
    o += 4;
    for (let p = 0; p < nParts; p++) {
      const partition = buf.readInt32BE(o);
      const size = buf.readInt32BE(o + 4);
      o += 8;
      const set = buf.subarray(o, o + Math.max(0, size));
      o += Math.max(0, size);
      let magic = -1;
      let codec = 'unknown';
      if (set.length > 17) {
        magic = set.readInt8(16);
        const attrs = magic === 2 ? set.readInt16BE(21) : set.readInt8(17);
        codec = CODEC_IDS[attrs & 7] ?? `codec-${attrs & 7}`;
      }
      entries.push({ topic, partition, magic, codec });
    }
  }
  return { acks, entries };
}

async function capture(name, bin) {
  const sc = SCENARIOS[name];
  const t0 = Date.now();
  const plan = { topic: TOPIC, groupId: `gregor-capture-${name}`, ...sc.plan() };
  const planFile = path.join(TMP, `${name}.plan.json`);
  writeFileSync(planFile, JSON.stringify(plan, null, 2));

  const mock = await startMock(bin);
  const relay = await startRelay({ upstream: mock.bootstrap, log });
  const env = {
    CAPTURE_BOOTSTRAP: relay.bootstrap,
    CAPTURE_PLAN: planFile,
    CAPTURE_DRIVER_TIMEOUT_MS: String(DRIVER_TIMEOUT_MS - 2000),
  };
  const problems = [];
  try {
    for (const step of sc.run(env, plan)) {
      const left = DRIVER_TIMEOUT_MS - (Date.now() - t0);
      if (left <= 0) {
        problems.push(`time budget exhausted before: ${step[0]} ${step[1].join(' ')}`);
        break;
      }
      const r = await runStep(step, left);
      const label = `${path.basename(step[0])} ${step[1]
        .filter((a) => !a.includes('127.0.0.1'))
        .slice(0, 8)
        .join(' ')}`;
      if (r.code !== 0)
        problems.push(
          `${label}: exit ${r.code ?? r.signal} after ${r.ms} ms${r.stderr ? `: ${r.stderr.split('\n').slice(-3).join(' | ')}` : ''}`,
        );
      else if (r.stderr) log(`${name}: ${label}: ${r.stderr.split('\n').slice(-4).join(' | ')}`);
    }
    await new Promise((r) => setTimeout(r, 300));
  } finally {
    await relay.close();
    mock.proc.kill('SIGTERM');
  }

  const all = relay.frames;
  for (const f of all) if (f.direction === 'request' && f.apiKey === 0) f.produce = inspectProduce(f.bytes, f.apiVersion);
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
  for (const b of batches) {
    if (b.requestSeqs.length === 0) problems.push(`no Produce request captured for ${b.codec} acks=${b.acks} p${b.partition}`);
    // Sanity check for uncompressed batches: every sent key/value/header string is on the wire.
    if (b.codec !== 'none') continue;
    const wire = Buffer.concat(produceReqs.filter((f) => b.requestSeqs.includes(f.seq)).map((f) => f.bytes));
    for (const r of b.records) {
      for (const s of [r.key, r.value, ...r.headers.flatMap((h) => [h.key, h.value])]) {
        if (s !== null && !wire.includes(Buffer.from(s))) problems.push(`sent string not found in Produce request: ${JSON.stringify(s)}`);
      }
    }
  }

  const fixture = {
    client: name,
    clientVersion: sc.version(),
    broker: 'librdkafka 2.0.2 mock cluster (scripts/capture/mock-broker.c) behind scripts/capture/relay.mjs',
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
  const summary = {
    name,
    clientVersion: fixture.clientVersion,
    total: all.length,
    kept: kept.length,
    requests: pairsOf(kept, 'request'),
    responses: pairsOf(kept, 'response'),
    problems,
    ms: Date.now() - t0,
  };
  log(
    `${name}: ${all.length} frames recorded, ${kept.length} kept, ${summary.ms} ms` +
      (problems.length ? `\n  problems:\n    ${problems.join('\n    ')}` : ''),
  );
  return summary;
}

// ---------------------------------------------------------------------------------------------
const wanted = process.argv.slice(2);
for (const w of wanted) if (!SCENARIOS[w]) throw new Error(`unknown scenario ${w}; known: ${Object.keys(SCENARIOS).join(' ')}`);
const names = wanted.length ? wanted : Object.keys(SCENARIOS);
const bin = ensureMockBinary();
const summaries = [];
for (const name of names) summaries.push(await capture(name, bin));

console.log('\n| scenario | client | requests (apiKey vN) | responses |\n|---|---|---|---|');
for (const s of summaries) console.log(`| ${s.name} | ${s.clientVersion} | ${fmtPairs(s.requests)} | ${fmtPairs(s.responses)} |`);
