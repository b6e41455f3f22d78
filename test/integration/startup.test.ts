/**
 * Issue 13, item 2: `gregor start` for tools and tests. The GREGOR_READY stdout line and --ready-file,
 * topics declared with --topic / GREGOR_TOPICS that exist when the broker says ready, exit 2 on bad
 * specs, the banner on a terminal only, and the advertised-listener warning. Brokers run as child
 * processes through bin/gregor.js, as tools and test harnesses run them.
 */
import { expect } from 'chai';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { startTestBroker, tempDir, type TestBroker } from '../helpers/broker.js';
import { PROJECT_ROOT } from '../helpers/project.js';
import { RawClient } from '../helpers/raw-client.js';

const BIN = join(PROJECT_ROOT, 'bin/gregor.js');

interface Ready {
  bootstrap: string;
  admin: string | null;
}

interface Gregor {
  child: ChildProcess;
  /** stdout so far */
  out(): string;
  err(): string;
  /** the parsed GREGOR_READY line (rejects if the process exits first) */
  ready: Promise<Ready>;
  exited: Promise<number | null>;
  /** resolves with the first stdout JSON log line whose msg matches */
  waitLog(msg: RegExp, timeoutMs?: number): Promise<Record<string, unknown>>;
  logs(): Record<string, unknown>[];
  stop(): Promise<number | null>;
}

function gregor(args: readonly string[], env: Record<string, string> = {}, timeoutMs = 30_000): Gregor {
  const child = spawn(process.execPath, [BIN, 'start', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, LOG_LEVEL: 'info', GREGOR_TOPICS: '', ...env },
  });
  let out = '';
  let err = '';
  const changed: (() => void)[] = [];
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    for (const f of changed.splice(0)) f();
  });
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const logs = () =>
    out
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  const until = <T>(what: string, probe: () => T | undefined, ms: number): Promise<T> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms\nstdout:\n${out}\nstderr:\n${err}`)), ms);
      const check = () => {
        const v = probe();
        if (v !== undefined) {
          clearTimeout(timer);
          resolve(v);
        } else changed.push(check);
      };
      void exited.then((code) => {
        clearTimeout(timer);
        const v = probe();
        if (v !== undefined) resolve(v);
        else reject(new Error(`${what}: exited with ${code}\nstdout:\n${out}\nstderr:\n${err}`));
      });
      check();
    });
  const ready = until(
    'GREGOR_READY',
    () => {
      const m = /^GREGOR_READY (.*)$/m.exec(out);
      return m?.[1] === undefined ? undefined : (JSON.parse(m[1]) as Ready);
    },
    timeoutMs,
  );
  ready.catch(() => undefined); // awaited by the tests that expect it
  return {
    child,
    out: () => out,
    err: () => err,
    ready,
    exited,
    logs,
    waitLog: (msg, ms = 10_000) => until(`log ${msg}`, () => logs().find((l) => msg.test(String(l['msg']))), ms),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

async function metadata(bootstrap: string, topics: string[]): Promise<Map<string, { errorCode: number; partitions: number }>> {
  const c = await RawClient.connect(bootstrap);
  try {
    const res = await c.request<{ topics: { name: string; errorCode: number; partitions: unknown[] }[] }>(3, 4, {
      topics: topics.map((name) => ({ name })),
      allowAutoTopicCreation: false,
    });
    return new Map(res.topics.map((t) => [t.name, { errorCode: t.errorCode, partitions: t.partitions.length }]));
  } finally {
    c.destroy();
  }
}

/** DescribeConfigs configSource: DYNAMIC_TOPIC_CONFIG (set on the topic) and DEFAULT_CONFIG. */
const TOPIC_CONFIG_SOURCE = 1;
const DEFAULT_CONFIG_SOURCE = 5;

async function topicConfigs(bootstrap: string, topic: string): Promise<Map<string, { value: string | null; source: number }>> {
  const c = await RawClient.connect(bootstrap);
  try {
    const res = await c.request<{
      results: { errorCode: number; configs: { name: string; value: string | null; configSource: number }[] }[];
    }>(32, 1, {
      resources: [{ resourceType: 2, resourceName: topic, configurationKeys: null }],
      includeSynonyms: false,
    });
    expect(res.results[0]?.errorCode, `DescribeConfigs ${topic}`).to.equal(0);
    return new Map((res.results[0]?.configs ?? []).map((x) => [x.name, { value: x.value, source: x.configSource }]));
  } finally {
    c.destroy();
  }
}

async function closedPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('gregor start: ready signal, declared topics, banner, advertised-listener check', () => {
  const dirs: string[] = [];
  const children: Gregor[] = [];
  const dir = () => {
    const d = tempDir('gregor-startup-');
    dirs.push(d);
    return d;
  };
  const start = (args: readonly string[], env: Record<string, string> = {}) => {
    const g = gregor(args, env);
    children.push(g);
    return g;
  };

  afterEach(async () => {
    await Promise.all(children.splice(0).map((g) => g.stop()));
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it('20 brokers started in parallel with --port 0 and --ready-file come up on distinct ports, each ready file matching its GREGOR_READY line', async function () {
    this.timeout(120_000);
    const t0 = performance.now();
    const runs = Array.from({ length: 20 }, () => {
      const d = dir();
      const readyFile = join(d, 'ready.json');
      return { readyFile, g: start(['--port', '0', '--data-dir', join(d, 'data'), '--ready-file', readyFile]) };
    });
    const readies = await Promise.all(runs.map((r) => r.g.ready));
    const ms = Math.round(performance.now() - t0);
    console.log(`      20 brokers ready in ${ms} ms`);

    const ports = new Set(readies.map((r) => r.bootstrap));
    expect(ports.size, 'distinct bootstrap addresses').to.equal(20);
    const admins = readies.map((r) => r.admin).filter((a) => a !== null);
    expect(new Set(admins).size, 'distinct admin addresses').to.equal(admins.length);
    for (const [i, { readyFile, g }] of runs.entries()) {
      const ready = readies[i]!;
      expect(ready.bootstrap).to.match(/^127\.0\.0\.1:\d+$/);
      expect(ready.bootstrap).to.not.equal('127.0.0.1:0');
      // the file is in place by the time the line is printed, and says the same
      expect(JSON.parse(readFileSync(readyFile, 'utf8'))).to.deep.equal(ready);
      // exactly one ready line, every other stdout line stays a JSON log line, nothing on stderr (no banner without a terminal)
      const lines = g
        .out()
        .split('\n')
        .filter((l) => l !== '');
      expect(
        lines.filter((l) => l.startsWith('GREGOR_READY ')),
        'ready lines',
      ).to.have.length(1);
      for (const l of lines.filter((x) => !x.startsWith('GREGOR_READY '))) expect(() => JSON.parse(l), l).to.not.throw();
      expect(g.err(), 'stderr').to.equal('');
      expect(
        g.logs().filter((l) => /advertised listener/.test(String(l['msg']))),
        'advertised-listener warnings',
      ).to.deep.equal([]);
    }
    // each address is the broker that printed it, and it answers Kafka requests
    const apiVersions = await Promise.all(
      readies.map(async (r) => {
        const c = await RawClient.connect(r.bootstrap);
        try {
          return (await c.request<{ errorCode: number }>(18, 0, {})).errorCode;
        } finally {
          c.destroy();
        }
      }),
    );
    expect(apiVersions).to.deep.equal(new Array(20).fill(0));
    // a clean stop exits 0 and removes the ready file
    const codes = await Promise.all(runs.map((r) => r.g.stop()));
    expect(codes).to.deep.equal(new Array(20).fill(0));
    for (const r of runs) expect(existsSync(r.readyFile), r.readyFile).to.equal(false);
  });

  it('declared topics (--topic and GREGOR_TOPICS) exist with their partitions and configs when the ready line appears', async () => {
    const d = dir();
    const g = start(
      [
        '--port',
        '0',
        '--data-dir',
        d,
        '--override',
        'auto.create.topics.enable=false',
        '--override',
        'num.partitions=4',
        '--topic',
        'orders:3',
        '--topic',
        'compacted:2:cleanup.policy=compact,delete,retention.ms=60000',
      ],
      { GREGOR_TOPICS: 'events:5;plain  logs:1:max.message.bytes=2000000' },
    );
    const { bootstrap } = await g.ready;
    const md = await metadata(bootstrap, ['orders', 'compacted', 'events', 'plain', 'logs', 'undeclared']);
    expect(Object.fromEntries(md)).to.deep.equal({
      orders: { errorCode: 0, partitions: 3 },
      compacted: { errorCode: 0, partitions: 2 },
      events: { errorCode: 0, partitions: 5 },
      plain: { errorCode: 0, partitions: 4 }, // num.partitions
      logs: { errorCode: 0, partitions: 1 },
      undeclared: { errorCode: 3, partitions: 0 }, // UNKNOWN_TOPIC_OR_PARTITION: nothing else was created
    });
    const compacted = await topicConfigs(bootstrap, 'compacted');
    expect(compacted.get('cleanup.policy')).to.deep.equal({ value: 'compact,delete', source: TOPIC_CONFIG_SOURCE });
    expect(compacted.get('retention.ms')).to.deep.equal({ value: '60000', source: TOPIC_CONFIG_SOURCE });
    expect((await topicConfigs(bootstrap, 'logs')).get('max.message.bytes')).to.deep.equal({
      value: '2000000',
      source: TOPIC_CONFIG_SOURCE,
    });
    expect((await topicConfigs(bootstrap, 'orders')).get('cleanup.policy')).to.deep.equal({
      value: 'delete',
      source: DEFAULT_CONFIG_SOURCE,
    });
    // created before the broker said it started
    const logs = g.logs();
    const started = logs.findIndex((l) => l['msg'] === 'gregor started');
    for (const t of ['orders', 'compacted', 'events', 'plain', 'logs']) {
      const created = logs.findIndex((l) => l['msg'] === 'topic created' && l['topic'] === t);
      expect(created, `${t} created`).to.be.greaterThan(-1);
      expect(created, `${t} created before 'gregor started'`).to.be.lessThan(started);
    }
  });

  it('a restart with the same declarations is quiet; a different partition count or config is left as it is, with a warning', async () => {
    const d = dir();
    const args = ['--port', '0', '--data-dir', d, '--topic', 'orders:3', '--topic', 'compacted:1:cleanup.policy=compact'];
    const first = start(args);
    await first.ready;
    expect(await first.stop()).to.equal(0);

    const again = start(args);
    await again.ready;
    expect(
      again.logs().filter((l) => l['msg'] === 'topic created' || l['level'] === 'warn'),
      'second start: nothing created, no warning',
    ).to.deep.equal([]);
    expect(await again.stop()).to.equal(0);

    const changed = start(['--port', '0', '--data-dir', d, '--topic', 'orders:5', '--topic', 'compacted:1:cleanup.policy=delete']);
    const { bootstrap } = await changed.ready;
    const warnings = changed.logs().filter((l) => l['level'] === 'warn');
    expect(warnings.map((w) => w['topic'])).to.have.members(['orders', 'compacted']);
    const orders = warnings.find((w) => w['topic'] === 'orders')!;
    expect(orders['msg']).to.match(/declared topic orders exists with 3 partitions instead of 5; left as it is/);
    expect(orders['declared']).to.deep.include({ partitions: 5 });
    expect(orders['existing']).to.deep.include({ partitions: 3 });
    expect(warnings.find((w) => w['topic'] === 'compacted')?.['msg']).to.match(/other values for cleanup.policy/);
    expect((await metadata(bootstrap, ['orders'])).get('orders')).to.deep.equal({ errorCode: 0, partitions: 3 });
    expect((await topicConfigs(bootstrap, 'compacted')).get('cleanup.policy')?.value).to.equal('compact');
  });

  it('a bad --topic spec, GREGOR_TOPICS or --ready-file exits 2 with a message naming it, before anything starts', async () => {
    const cases: { args: string[]; env?: Record<string, string>; err: RegExp }[] = [
      {
        args: ['--topic', 'orders:zero'],
        err: /GREGOR_ERR_TOPIC_SPEC: --topic 'orders:zero': partitions must be a positive integer, got 'zero' \(syntax: name\[:partitions\[:key=value,\.\.\.\]\]\)/,
      },
      { args: ['--topic', 'bad/name:1'], err: /GREGOR_ERR_TOPIC_SPEC: --topic 'bad\/name:1': Topic name "bad\/name" contains characters/ },
      {
        args: ['--topic', 'orders:1:retention.ms=soon'],
        err: /--topic 'orders:1:retention.ms=soon': retention.ms=soon: expected an integer/,
      },
      { args: ['--topic', 'orders:1:colour=blue'], err: /unknown topic config 'colour'/ },
      { args: ['--topic'], err: /--topic needs a value/ },
      {
        args: [],
        env: { GREGOR_TOPICS: 'a:1:1,b:3:1' },
        err: /GREGOR_ERR_TOPIC_SPEC: GREGOR_TOPICS 'a:1:1,b:3:1': separate topics with spaces or ';'/,
      },
      { args: [], env: { GREGOR_TOPICS: 'ok:1 orders:0' }, err: /GREGOR_TOPICS 'orders:0': partitions must be a positive integer/ },
      { args: ['--topic', 'a:1'], env: { GREGOR_TOPICS: 'a:2' }, err: /topic 'a' is declared twice, differently/ },
      {
        args: ['--ready-file', '/nonexistent-dir/ready.json'],
        err: /--ready-file \/nonexistent-dir\/ready.json: ENOENT: no such file or directory/,
      },
    ];
    const d = dir();
    const results = await Promise.all(
      cases.map(async (c, i) => {
        const dataDir = join(d, `data-${i}`);
        const g = start(['--port', '0', '--data-dir', dataDir, ...c.args], c.env ?? {});
        return { c, g, dataDir, code: await g.exited };
      }),
    );
    for (const { c, g, dataDir, code } of results) {
      const what = `${c.args.join(' ')} ${JSON.stringify(c.env ?? {})}`;
      expect(code, what).to.equal(2);
      expect(g.err(), what).to.match(c.err);
      expect(g.out(), what).to.not.match(/GREGOR_READY|gregor started/);
      expect(existsSync(dataDir), `${what}: no data dir`).to.equal(false);
    }
  });

  it('prints a banner with the addresses and a KAFKA_BOOTSTRAP_SERVERS line on a terminal (script(1) pty), and none otherwise', async function () {
    if (spawnSync('script', ['--version']).status !== 0) this.skip();
    const d = dir();
    const cmd = [process.execPath, BIN, 'start', '--port', '0', '--data-dir', d, '--topic', 'orders:2'].map((a) => `'${a}'`).join(' ');
    const child = spawn('script', ['-qfec', cmd, '/dev/null'], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, LOG_LEVEL: 'info', GREGOR_TOPICS: '' },
    });
    let out = '';
    child.stdout.on('data', (x: Buffer) => (out += x.toString()));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no banner and ready line within 30 s:\n${out}`)), 30_000);
        child.stdout.on('data', () => {
          if (/KAFKA_BOOTSTRAP_SERVERS=.*\r?\n/.test(out) && /GREGOR_READY \{.*\}\r?\n/.test(out)) {
            clearTimeout(timer);
            resolve();
          }
        });
      });
      const ready = JSON.parse(/GREGOR_READY (\{.*\})/.exec(out)?.[1] ?? 'null') as Ready;
      expect(out).to.match(/gregor [\d.]+ ready in \d+ ms/);
      expect(out).to.include(`Kafka   ${ready.bootstrap}`);
      expect(out).to.include(`data    ${d}`);
      expect(out).to.include('topics  orders (2)');
      expect(out).to.include(`export KAFKA_BOOTSTRAP_SERVERS=${ready.bootstrap}`);
      if (ready.admin !== null) expect(out).to.include(`admin   http://${ready.admin}`);
    } finally {
      child.stdin.write('\x03'); // Ctrl-C on the terminal: SIGINT to the broker
      const pid = Number(/"pid":(\d+)/.exec(out)?.[1] ?? 0);
      const t = setTimeout(() => (pid > 0 ? process.kill(pid, 'SIGTERM') : child.kill('SIGKILL')), 5_000);
      await exited;
      clearTimeout(t);
    }
    // the same broker without a terminal: stderr stays empty (checked for 20 brokers above too)
    const plain = start(['--port', '0', '--data-dir', dir(), '--topic', 'orders:2']);
    await plain.ready;
    expect(plain.err()).to.equal('');
  });

  it('warns once when an advertised listener does not resolve, does not accept connections, or is another broker; not when it reaches this broker', async () => {
    const other: TestBroker = await startTestBroker();
    try {
      const refused = await closedPort();
      const adv = (a: string) => ['--port', '0', '--data-dir', dir(), '--override', `advertised.listeners=PLAINTEXT://${a}`];
      const unresolved = start(adv('nonexistent.invalid:9092'));
      const unreachable = start(adv(`127.0.0.1:${refused}`));
      const otherBroker = start(adv(other.bootstrap));
      const self = start(adv('localhost:0'), { LOG_LEVEL: 'debug' }); // port 0: the bound port, through another name

      expect((await unresolved.ready).bootstrap, 'the ready line gives the advertised address').to.equal('nonexistent.invalid:9092');
      const w1 = await unresolved.waitLog(/^advertised listener/);
      expect(w1).to.deep.include({ level: 'warn', listener: 'PLAINTEXT', advertised: 'nonexistent.invalid:9092', problem: 'unresolved' });
      expect(w1['msg']).to.match(/advertised listener PLAINTEXT nonexistent.invalid:9092 does not resolve \((ENOTFOUND|EAI_AGAIN)\)/);

      await unreachable.ready;
      const w2 = await unreachable.waitLog(/^advertised listener/);
      expect(w2).to.deep.include({ level: 'warn', advertised: `127.0.0.1:${refused}`, problem: 'unreachable', detail: 'ECONNREFUSED' });
      expect(w2['msg']).to.match(/does not accept connections/);

      await otherBroker.ready;
      const w3 = await otherBroker.waitLog(/^advertised listener/);
      expect(w3).to.deep.include({ level: 'warn', advertised: other.bootstrap, problem: 'other-broker' });
      expect(w3['msg']).to.match(/is answered by another broker \(cluster id \S+, not \S+\)/);

      const selfReady = await self.ready;
      expect(selfReady.bootstrap).to.match(/^localhost:\d+$/);
      const ok = await self.waitLog(/^advertised listener answers/);
      expect(ok).to.deep.include({ advertised: selfReady.bootstrap });
      expect(self.logs().filter((l) => l['level'] === 'warn')).to.deep.equal([]);

      // one line each, even a while later
      await new Promise((r) => setTimeout(r, 300));
      for (const g of [unresolved, unreachable, otherBroker])
        expect(g.logs().filter((l) => /^advertised listener/.test(String(l['msg'])))).to.have.length(1);
    } finally {
      await other.stop();
    }
  });

  it('start() does not wait for the advertised-listener check, and stop() cancels it', async () => {
    // accepts and never answers: the check holds its connection until its 3 s timeout
    const held: net.Socket[] = [];
    let closedAt = 0;
    const silent = net.createServer((s) => {
      held.push(s);
      s.resume(); // read (and drop) the request, so the peer's close is seen
      s.on('close', () => (closedAt = performance.now()));
      s.on('error', () => undefined);
    });
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
    const port = (silent.address() as net.AddressInfo).port;
    try {
      const t0 = performance.now();
      const b = await startTestBroker({ 'advertised.listeners': `PLAINTEXT://127.0.0.1:${port}` });
      const startedMs = performance.now() - t0;
      for (let i = 0; i < 200 && held.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
      expect(held, 'the check connected').to.have.length(1);
      expect(closedAt, 'the check is still waiting once start() resolved').to.equal(0);
      expect(startedMs).to.be.lessThan(3000);
      const stopAt = performance.now();
      await b.stop();
      for (let i = 0; i < 100 && closedAt === 0; i++) await new Promise((r) => setTimeout(r, 10));
      expect(closedAt, 'stop() closed the check connection').to.be.greaterThan(0);
      expect(closedAt - stopAt, 'well before the 3 s timeout').to.be.lessThan(1500);
    } finally {
      for (const s of held) s.destroy();
      await new Promise<void>((r) => silent.close(() => r()));
    }
  });
});
