/**
 * The compat smoke subset against a 3-broker gregor cluster (issue 15): runSuite({cluster: 3}) starts a
 * real etcd and three `gregor start` processes (replication factor 3 for every topic and both internal
 * topics, min.insync.replicas 2), runs the metadata, produce-consume, idempotent-producer and
 * transactions scenarios for every client column, and must give the same outcomes as a single node;
 * the stored-log checks compare every replica's log files with what the leader serves. results.json
 * and REPORT.md must name the cluster, and everything the suite started must be gone afterwards.
 */
import { expect } from 'chai';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLIENTS } from '../../compat/lib/clients.js';
import { RESULTS_SCHEMA, type ResultsFile } from '../../compat/lib/results.js';
import { runSuite } from '../../compat/lib/suite.js';
import { SMOKE_IDS, SMOKE_ROWS, SMOKE_SCENARIOS, unexpectedCells } from '../helpers/compat-smoke.js';

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('compat smoke against a 3-broker cluster (runSuite({cluster: 3}))', function () {
  this.timeout(150_000);
  let out: string;
  let clusterDir: string;
  before(() => {
    out = mkdtempSync(join(tmpdir(), 'gregor-compat-cluster-smoke-'));
    clusterDir = join(out, 'cluster');
  });
  after(() => rmSync(out, { recursive: true, force: true }));

  it('passes every smoke cell a single node passes, checks every replica, and records the cluster', async () => {
    expect(SMOKE_SCENARIOS.map((s) => s.id)).to.deep.equal(SMOKE_IDS);
    const lines: string[] = [];
    const run = await runSuite({
      scenarios: SMOKE_SCENARIOS,
      clients: CLIENTS,
      outDir: out,
      cluster: 3,
      clusterDir,
      progress: (l) => lines.push(l),
    });
    expect(unexpectedCells(run.results.cells)).to.deep.equal([]);
    expect(run.results.cells).to.have.length(SMOKE_SCENARIOS.length * CLIENTS.length);
    // the clients saw three brokers; the stored logs were compared on all three replicas
    for (const c of run.results.cells.filter((x) => x.scenario === 'metadata')) expect(c.details).to.match(/^3 broker\(s\) /);
    for (const c of run.results.cells.filter((x) => x.outcome === 'pass' && ['idempotent-producer', 'transactions'].includes(x.scenario)))
      expect(c.details, `${c.scenario} × ${c.client}`).to.contain('identical on 3 replicas');

    const saved = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8')) as ResultsFile;
    expect(saved.schema).to.equal(RESULTS_SCHEMA);
    expect(saved.broker.kind).to.equal('gregor');
    const cluster = saved.broker.cluster;
    expect(cluster?.brokers).to.equal(3);
    expect(cluster?.nodes.map((n) => n.nodeId)).to.deep.equal([1, 2, 3]);
    expect(saved.broker.bootstrap).to.equal(cluster?.nodes.map((n) => n.bootstrap).join(','));
    expect(cluster?.metadataStore).to.match(/^etcd \d+\.\d+/);
    expect(cluster?.overrides).to.include({
      'default.replication.factor': '3',
      'offsets.topic.replication.factor': '3',
      'transaction.state.log.replication.factor': '3',
      'min.insync.replicas': '2',
    });
    const report = readFileSync(join(out, 'REPORT.md'), 'utf8');
    expect(report).to.contain('against **3-broker gregor cluster ');
    expect(report).to.contain('3 brokers (node 1 at ');
    for (const row of SMOKE_ROWS) expect(report).to.contain(row);

    // everything was stopped: no broker or etcd process left (their pids are in the first progress line)
    const first = lines.find((l) => l.startsWith('broker under test:')) ?? '';
    const pids = [...(/pids ([\d, ]+);/.exec(first)?.[1]?.split(', ') ?? []), /etcd [^ ]+ pid (\d+) at /.exec(first)?.[1]].map(Number);
    expect(pids, first).to.have.length(4);
    expect(pids.filter(alive)).to.deep.equal([]);
    // the kept cluster dir holds each broker's replica of the smoke topics
    for (const id of [1, 2, 3])
      expect(readdirSync(join(clusterDir, `broker-${id}`)).filter((d) => d.startsWith('compat-transactions-'))).to.have.length(
        CLIENTS.length - 2,
      );
  });
});
