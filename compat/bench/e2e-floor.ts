/**
 * Issue 14: the floor under the end-to-end round, on this machine. A server process with no broker in
 * it makes exactly the system calls one e2e round (acks=all, one record at a time, a parked long-poll
 * Fetch) makes in gregor: read a produce request, append ~170 bytes to a file with a synchronous write,
 * answer the producer, answer the parked fetch, read the consumer's next fetch. Its CPU per round
 * (utime+stime of the server process, and of its main thread) is what Node and the kernel cost before
 * any Kafka work; its round latency percentiles are what scheduling and wake-ups alone give. Run it
 * beside `e2e-threads` (same machine, same minute) to read gregor's own share.
 *
 *   node dist/compat/bench/e2e-floor.js            (FLOOR_ROUNDS=5000, FLOOR_REPEAT=3, FLOOR_WARMUP=500)
 *
 * Variants, each on a fresh server: `node` (net.Socket 'data' + write, the plain Node path) and
 * `node-nofile` (the same without the file append, to show what the append costs), both with this
 * process as the client (not counted): its one event loop holds both sockets, so the second answer of
 * a round finds it awake. `node-threads` is `node` with compat/bench/native/floor-client.c as the
 * client, shaped like librdkafka: the producer and the consumer block in threads of their own, so each
 * answer wakes a sleeping thread, as under rdkafka-e2e (FLOOR_THREADS=0 leaves it out; it needs the
 * librdkafka build that the C programs are built against). Frames are 4-byte length-prefixed like
 * Kafka's. Writes compat/results/e2e-floor-<time>.json.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { createConnection, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { librdkafkaMissing, buildRdkafkaProgram } from './native-build.js';
import { cpuSeconds, envInt, mainThreadTimes, percentile, round, ROOT_DIR, writeBench } from './proc-stats.js';

const PRODUCE = 0x50; // 'P'
const FETCH = 0x46; // 'F'
/** sizes as librdkafka and gregor send them for one 100-byte record: produce request/response, fetch request/response */
const SIZES = { produce: 190, produceResponse: 60, fetch: 110, fetchResponse: 250, append: 170 } as const;

/** Calls `onFrame` with each complete length-prefixed frame read from `socket`. */
function frames(socket: Socket, onFrame: (frame: Buffer) => void): void {
  let pending: Buffer | null = null;
  socket.on('data', (chunk: Buffer) => {
    let buf = pending === null ? chunk : Buffer.concat([pending, chunk]);
    while (buf.length >= 4) {
      const size = buf.readInt32BE(0);
      if (buf.length < 4 + size) break;
      onFrame(buf.subarray(4, 4 + size));
      buf = buf.subarray(4 + size);
    }
    pending = buf.length > 0 ? buf : null;
  });
}

function frame(type: number, size: number): Buffer {
  const b = Buffer.alloc(4 + size, 0x61);
  b.writeInt32BE(size, 0);
  b[4] = type;
  return b;
}

/** The server side: prints its port, serves until stdin closes. */
function serve(appendTo: string | null): void {
  const fd = appendTo === null ? -1 : openSync(appendTo, 'a');
  const record = Buffer.alloc(SIZES.append, 0x62);
  let parked: Socket | null = null;
  // appended records no fetch has carried yet (a fetch that arrives after its produce is answered at once)
  let undelivered = 0;
  const server = createServer((socket) => {
    socket.setNoDelay(true);
    socket.on('error', () => socket.destroy());
    socket.on('close', () => {
      if (parked === socket) parked = null;
    });
    frames(socket, (f) => {
      if (f[0] === FETCH) {
        if (undelivered > 0) {
          undelivered--;
          socket.write(frame(FETCH, SIZES.fetchResponse - 4));
        } else parked = socket;
        return;
      }
      if (fd >= 0) writeSync(fd, record);
      socket.write(frame(PRODUCE, SIZES.produceResponse - 4));
      if (parked !== null) {
        parked.write(frame(FETCH, SIZES.fetchResponse - 4));
        parked = null;
      } else undelivered++;
    });
  });
  server.listen(0, '127.0.0.1', () => {
    const a = server.address();
    process.stdout.write(`${typeof a === 'object' && a !== null ? a.port : 0}\n`);
  });
  process.stdin.on('end', () => {
    server.close();
    if (fd >= 0) closeSync(fd);
    process.exit(0);
  });
  process.stdin.resume();
}

interface FloorRun {
  variant: string;
  rounds: number;
  serverUsPerRound: number;
  serverMainUsPerRound: number;
  /** the main thread's share in user space (JavaScript, V8, Node's C++) and in the kernel (system calls, TCP) */
  serverMainUserUsPerRound: number;
  serverMainSysUsPerRound: number;
  p50Ms: number;
  p99Ms: number;
  p999Ms: number;
  maxMs: number;
}

async function startServer(variant: string, dir: string): Promise<{ child: ChildProcess; port: number }> {
  const self = fileURLToPath(import.meta.url);
  const args = [self, '--serve', variant === 'node-nofile' ? '-' : join(dir, `${variant}.log`)];
  const child = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.once('data', (d: Buffer) => resolve(Number(d.toString().trim())));
    child.once('exit', (code) => reject(new Error(`floor server exited with ${String(code)}`)));
  });
  return { child, port };
}

function connect(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = createConnection({ port, host: '127.0.0.1' }, () => resolve(s));
    s.setNoDelay(true);
    s.once('error', reject);
  });
}

/** `rounds` timed rounds after `warmup` untimed ones on one server. */
async function measure(variant: string, port: number, pid: number, rounds: number, warmup: number): Promise<FloorRun> {
  const producer = await connect(port);
  const consumer = await connect(port);
  const produce = frame(PRODUCE, SIZES.produce - 4);
  const fetch = frame(FETCH, SIZES.fetch - 4);
  const latencies: number[] = [];
  let cpu0 = 0;
  let main0: Times = { user: 0, system: 0 };
  await new Promise<void>((done) => {
    let n = 0;
    let acked = false;
    let fetched = false;
    let t0 = 0;
    const next = (): void => {
      if (n === warmup) {
        cpu0 = cpuSeconds(pid);
        main0 = mainThreadTimes(pid);
      }
      if (n === warmup + rounds) {
        done();
        return;
      }
      acked = false;
      fetched = false;
      t0 = performance.now();
      producer.write(produce);
    };
    const maybeNext = (): void => {
      if (!(acked && fetched)) return;
      if (n >= warmup) latencies.push(performance.now() - t0);
      n++;
      next();
    };
    frames(producer, () => {
      acked = true;
      maybeNext();
    });
    frames(consumer, () => {
      // as a consumer does: the next long-poll fetch goes out as soon as an answer is in
      consumer.write(fetch);
      fetched = true;
      maybeNext();
    });
    consumer.write(fetch);
    next();
  });
  const cpu = cpuSeconds(pid) - cpu0;
  const main = since(main0, mainThreadTimes(pid));
  producer.destroy();
  consumer.destroy();
  return floorRun(variant, rounds, cpu, main, latencies);
}

interface Times {
  user: number;
  system: number;
}

/** The main thread's user and system seconds between two readings. */
function since(a: Times, b: Times): Times {
  return { user: b.user - a.user, system: b.system - a.system };
}

/** A run's figures from the server's CPU seconds (process, main thread) and the round latencies (ms). */
function floorRun(variant: string, rounds: number, cpu: number, main: Times, latenciesMs: number[]): FloorRun {
  const ms = [...latenciesMs].sort((a, b) => a - b);
  const perRound = (s: number): number => round((s / rounds) * 1e6, 1);
  return {
    variant,
    rounds,
    serverUsPerRound: perRound(cpu),
    serverMainUsPerRound: perRound(main.user + main.system),
    serverMainUserUsPerRound: perRound(main.user),
    serverMainSysUsPerRound: perRound(main.system),
    p50Ms: round(percentile(ms, 50), 3),
    p99Ms: round(percentile(ms, 99), 3),
    p999Ms: round(percentile(ms, 99.9), 3),
    maxMs: round(ms[ms.length - 1] ?? 0, 3),
  };
}

/** As measure(), with floor-client.c as the client: producer and consumer in threads of their own. */
async function measureThreads(variant: string, port: number, pid: number, rounds: number, warmup: number): Promise<FloorRun> {
  const binary = buildRdkafkaProgram(
    join(ROOT_DIR, 'compat/bench/native/floor-client.c'),
    join(ROOT_DIR, 'dist/compat/bench/native/floor-client'),
  );
  const sizes = [SIZES.produce, SIZES.fetch, SIZES.produceResponse, SIZES.fetchResponse].map(String);
  const child = spawn(binary, [String(port), String(warmup), String(rounds), ...sizes], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async (prefix: string): Promise<string> => {
    const r = await lines.next();
    if (r.done === true || !r.value.startsWith(prefix)) throw new Error(`floor-client: expected "${prefix}"`);
    return r.value.slice(prefix.length).trim();
  };
  await next('warm');
  const cpu0 = cpuSeconds(pid);
  const main0 = mainThreadTimes(pid);
  child.stdin.write('go\n');
  const latenciesUs = (await next('done')).split(',').map(Number);
  const cpu = cpuSeconds(pid) - cpu0;
  const main = since(main0, mainThreadTimes(pid));
  child.stdin.end();
  await new Promise((r) => child.once('exit', r));
  return floorRun(
    variant,
    rounds,
    cpu,
    main,
    latenciesUs.map((us) => us / 1000),
  );
}

async function main(): Promise<void> {
  const rounds = envInt('FLOOR_ROUNDS', 5000);
  const repeat = envInt('FLOOR_REPEAT', 3);
  const warmup = envInt('FLOOR_WARMUP', 500);
  const dir = mkdtempSync(join(tmpdir(), 'gregor-e2e-floor-'));
  const runs: FloorRun[] = [];
  try {
    const threads = envInt('FLOOR_THREADS', 1) !== 0 && librdkafkaMissing() === null;
    for (const variant of ['node', 'node-nofile', ...(threads ? ['node-threads'] : [])]) {
      const { child, port } = await startServer(variant, dir);
      try {
        for (let i = 0; i < repeat; i++) {
          const r =
            variant === 'node-threads'
              ? await measureThreads(variant, port, child.pid ?? 0, rounds, warmup)
              : await measure(variant, port, child.pid ?? 0, rounds, warmup);
          process.stdout.write(JSON.stringify(r) + '\n');
          runs.push(r);
        }
      } finally {
        child.stdin?.end();
        await new Promise((r) => child.once('exit', r));
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const path = writeBench(
    join(ROOT_DIR, 'compat/results'),
    {
      id: `e2e-floor-${new Date().toISOString().replace(/:/g, '-')}`,
      title: 'The e2e round without a broker: Node + kernel floor',
      description:
        "A server process making one e2e round's system calls (read produce, sync append, answer producer, answer parked fetch, read next fetch) with no Kafka work; CPU per round of the server process and its main thread, and round latency percentiles.",
      headline: runs
        .filter((_, i) => i % repeat === repeat - 1)
        .map(
          (r) =>
            `${r.variant}: ${r.serverUsPerRound} µs/round (main ${r.serverMainUsPerRound}: user ${r.serverMainUserUsPerRound}, system ${r.serverMainSysUsPerRound}), p99 ${r.p99Ms} ms, p99.9 ${r.p999Ms} ms`,
        ),
      table: {
        columns: [
          'variant',
          'rounds',
          'server µs/round',
          'main µs/round',
          'main user',
          'main system',
          'p50 ms',
          'p99 ms',
          'p99.9 ms',
          'max ms',
        ],
        rows: runs.map((r) => [
          r.variant,
          r.rounds,
          r.serverUsPerRound,
          r.serverMainUsPerRound,
          r.serverMainUserUsPerRound,
          r.serverMainSysUsPerRound,
          r.p50Ms,
          r.p99Ms,
          r.p999Ms,
          r.maxMs,
        ]),
      },
      notes: [`FLOOR_ROUNDS=${rounds}, FLOOR_REPEAT=${repeat}, FLOOR_WARMUP=${warmup}; the client is the bench process itself.`],
    },
    { runs },
  );
  process.stdout.write(`${path}\n`);
}

if (process.argv[2] === '--serve') serve(process.argv[3] === '-' ? null : (process.argv[3] ?? null));
else await main();
