/**
 * Connection limits and slow clients against child brokers (issue 17 item 4): 10,000 concurrent
 * connections accepted under max.connections=10000 and the next one refused; max.connections.per.ip
 * and its overrides exactly as configured; slow-loris clients cut off by
 * gregor.request.read.timeout.ms; one log line per event class, not per connection.
 */
import { expect } from 'chai';
import kafkajs from 'kafkajs';
import { readFileSync, rmSync } from 'node:fs';
import { encodeRequest } from '../../protocol/frame.js';
import { startChildBroker, tempDir, type ChildBroker } from '../helpers/broker.js';
import { processRss } from '../helpers/raw-client.js';
import { Client, OpenClients } from '../lib/network/helpers.js';

const API_VERSIONS = encodeRequest({ apiKey: 18, apiVersion: 0, correlationId: 1, clientId: 'conn-test' }, {}, { sizePrefix: true });

/** Sends ApiVersions v0: 'answered' or 'closed' (refused connections are closed unanswered). */
function probe(c: Client, timeoutMs = 10000): Promise<'answered' | 'closed'> {
  if (!c.closed) c.send(API_VERSIONS);
  return c.waitFor(1, timeoutMs).then(
    () => 'answered' as const,
    () => 'closed' as const,
  );
}

/** Opens n connections, at most `parallel` connecting at once (the listen backlog is finite). */
async function openMany(clients: OpenClients, port: number, n: number, localAddress?: string, parallel = 256): Promise<Client[]> {
  const out: Client[] = [];
  for (let i = 0; i < n; i += parallel) {
    const batch = await Promise.all(Array.from({ length: Math.min(parallel, n - i) }, () => clients.connect(port, localAddress)));
    out.push(...batch);
  }
  return out;
}

/** The soft limit on open files of this process (/proc/self/limits). */
function openFilesLimit(): number {
  const m = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
  return m?.[1] === undefined ? 0 : m[1] === 'unlimited' ? Infinity : Number(m[1]);
}

async function metric(b: ChildBroker, name: string, label = ''): Promise<number> {
  const text = await (await fetch(`http://${b.admin!}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(name) && l.includes(label));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

/** Reads a metric until it shows `want` or `ms` pass; returns the last reading. */
async function metricReaches(b: ChildBroker, name: string, want: number, ms: number): Promise<number> {
  const deadline = Date.now() + ms;
  let v = await metric(b, name);
  while (v !== want && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    v = await metric(b, name);
  }
  return v;
}

function logLines(b: ChildBroker & { output(): string }, msg: string): Record<string, unknown>[] {
  return b
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{') && l.includes(msg))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe('overload: connection limits and slow clients (child brokers)', function () {
  this.timeout(240_000);
  const dirs: string[] = [];
  const brokers: ChildBroker[] = [];
  const clients = new OpenClients();

  async function broker(overrides: Record<string, string>): Promise<ChildBroker & { output(): string }> {
    const dir = tempDir('gregor-conns-');
    dirs.push(dir);
    const b = await startChildBroker(dir, 0, { 'admin.listener': '0', ...overrides });
    brokers.push(b);
    return b;
  }

  afterEach(async () => {
    clients.destroyAll();
    for (const b of brokers.splice(0)) {
      b.child.kill('SIGKILL');
      await b.exited;
    }
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it('accepts 10,000 concurrent connections under max.connections=10000 and refuses the next ones at once', async function () {
    // Each side holds 10,000 sockets: this process and the broker (which inherits this limit).
    const limit = openFilesLimit();
    if (limit < 10_600) {
      // raise it for the run: e.g. `prlimit --nofile=20000 --pid $$` or `ulimit -n 20000` before npm test
      console.log(`      skipped: this process may open ${limit} files, the test needs 10,600 (ulimit -n 20000)`);
      this.skip();
    }
    const N = 10_000;
    const b = await broker({ 'max.connections': String(N) });
    const conns = await openMany(clients, b.port, N);
    // every one of them is served: a sample answers ApiVersions
    const sample = conns.filter((_, i) => i % 100 === 0);
    expect(await Promise.all(sample.map((c) => probe(c)))).to.deep.equal(sample.map(() => 'answered'));
    expect(conns.filter((c) => c.closed)).to.have.length(0);
    // A client's connect completes with the handshake, before the broker accepts the socket; a
    // handshake whose last ACK found the listen backlog full is only queued when the broker's SYN-ACK
    // is sent again (after 1 s, 2 s, ...). Seen with a busy second core: 9,987 counted right after
    // the sample answered.
    expect(await metricReaches(b, 'kafka_server_socket_server_metrics_connection_count', N, 30_000)).to.equal(N);
    console.log(`      broker RSS with ${N} connections: ${((await processRss(b.child.pid!)) / 1048576).toFixed(0)} MB`);
    // the next five are closed without an answer
    const over = await openMany(clients, b.port, 5);
    expect(await Promise.all(over.map((c) => probe(c)))).to.deep.equal(over.map(() => 'closed'));
    expect(await metric(b, 'gregor_network_connections_refused_total', 'max.connections"')).to.equal(5);
    expect(logLines(b, 'rejected connection: max.connections reached')).to.have.length(1);
    // one closes, one more gets in
    conns[0]!.socket.destroy();
    expect(await metricReaches(b, 'kafka_server_socket_server_metrics_connection_count', N - 1, 10_000)).to.equal(N - 1);
    expect(await probe(await clients.connect(b.port))).to.equal('answered');
  });

  it('max.connections.per.ip and its overrides (updated dynamically): exactly as many accepted per address, one log line', async () => {
    const b = await broker({ 'max.connections.per.ip': '10', 'max.connections.per.ip.overrides': '127.0.0.2:50' });
    // dynamic, as in Kafka: the limits changed with AlterConfigs apply to the next connections
    const kafka = new kafkajs.Kafka({ clientId: 'conn-test', brokers: [b.bootstrap], logLevel: kafkajs.logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    const nodeId = (await admin.describeCluster()).brokers[0]!.nodeId;
    await admin.alterConfigs({
      validateOnly: false,
      resources: [
        {
          type: kafkajs.ConfigResourceTypes.BROKER,
          name: String(nodeId), // kafkajs refuses '' (every broker)
          configEntries: [
            { name: 'max.connections.per.ip', value: '20' },
            { name: 'max.connections.per.ip.overrides', value: '127.0.0.2:50,127.0.0.3:0' },
          ],
        },
      ],
    });
    await admin.disconnect();
    while ((await metric(b, 'kafka_server_socket_server_metrics_connection_count')) > 0) await new Promise((r) => setTimeout(r, 20));
    const fromDefault = await openMany(clients, b.port, 25, '127.0.0.1');
    const fromOverride = await openMany(clients, b.port, 55, '127.0.0.2');
    const fromZero = await openMany(clients, b.port, 3, '127.0.0.3');
    const count = async (cs: Client[]) => (await Promise.all(cs.map((c) => probe(c)))).filter((r) => r === 'answered').length;
    expect(await count(fromDefault)).to.equal(20);
    expect(await count(fromOverride)).to.equal(50);
    expect(await count(fromZero)).to.equal(0);
    expect(await metric(b, 'gregor_network_connections_refused_total', 'max.connections.per.ip"')).to.equal(5 + 5 + 3);
    const lines = logLines(b, 'rejected connection: max.connections.per.ip reached');
    expect(lines).to.have.length(1); // 13 refusals from three addresses: one line per 10 s
    expect(lines[0]!['level']).to.equal('warn');
  });

  it('gregor.request.read.timeout.ms closes slow-loris connections; a kafkajs client keeps working', async () => {
    const b = await broker({ 'gregor.request.read.timeout.ms': '1000' });
    const slow = await openMany(clients, b.port, 20);
    let dripping = true;
    const drips = slow.map(async (c) => {
      for (let i = 0; i < API_VERSIONS.length && dripping && !c.closed; i++) {
        c.send(API_VERSIONS.subarray(i, i + 1));
        await new Promise((r) => setTimeout(r, 250));
      }
    });
    const kafka = new kafkajs.Kafka({ clientId: 'conn-test', brokers: [b.bootstrap], logLevel: kafkajs.logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: 'meanwhile', numPartitions: 1 }] });
    await Promise.all(slow.map((c) => c.waitClosed(15000)));
    dripping = false;
    await Promise.all(drips);
    expect(slow.filter((c) => c.responses.length > 0)).to.have.length(0);
    expect(await admin.listTopics()).to.include('meanwhile');
    await admin.disconnect();
    const lines = logLines(b, 'request not received whole within gregor.request.read.timeout.ms');
    expect(lines).to.have.length(1);
  });
});
