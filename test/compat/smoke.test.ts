/**
 * Smoke subset of the compat suite inside `npm test`: every client column once through the suite's own
 * code path (runSuite: gregor child process, the metadata, produce-consume, idempotent-producer and
 * transactions scenarios, results + report).
 * Also checks the SVG chart writer and the report's benchmark section.
 */
import { expect } from 'chai';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BENCH_SCHEMA, validateBench } from '../../compat/lib/bench.js';
import { CLIENTS } from '../../compat/lib/clients.js';
import { writeReport } from '../../compat/lib/report.js';
import { parseResults, RESULTS_SCHEMA, type ResultsFile } from '../../compat/lib/results.js';
import { runSuite } from '../../compat/lib/suite.js';
import { formatNumber, niceScale, renderChart } from '../../compat/lib/svg-chart.js';
import { noEos, SMOKE_IDS, SMOKE_ROWS, SMOKE_SCENARIOS, unexpectedCells } from '../helpers/compat-smoke.js';

describe('compat smoke: every client once (metadata, produce/consume, idempotence, transactions)', function () {
  this.timeout(120_000);
  let out: string;
  before(() => {
    out = mkdtempSync(join(tmpdir(), 'gregor-compat-smoke-'));
  });
  after(() => rmSync(out, { recursive: true, force: true }));

  it('runs the smoke scenarios for each client column and writes results.json and REPORT.md', async () => {
    expect(SMOKE_SCENARIOS.map((s) => s.id)).to.deep.equal(SMOKE_IDS);
    const run = await runSuite({ scenarios: SMOKE_SCENARIOS, clients: CLIENTS, outDir: out, progress: () => undefined });
    expect(unexpectedCells(run.results.cells)).to.deep.equal([]);
    for (const c of run.results.cells.filter(noEos))
      expect(c.reason).to.match(/^kafka-python 2\.0\.2 has no (idempotent|transactional) producer/);
    expect(run.results.cells).to.have.length(SMOKE_SCENARIOS.length * CLIENTS.length);
    const saved = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8')) as ResultsFile;
    expect(saved.schema).to.equal(RESULTS_SCHEMA);
    expect(saved.broker.kind).to.equal('gregor');
    expect(saved.broker.cluster).to.equal(undefined);
    expect(saved.broker.apiVersions.some((a) => a.name === 'Produce')).to.equal(true);
    expect(saved.clients.map((c) => c.id)).to.deep.equal(CLIENTS.map((c) => c.id));
    const report = readFileSync(join(out, 'REPORT.md'), 'utf8');
    expect(report).to.contain('against **single-node gregor ');
    for (const row of SMOKE_ROWS) expect(report).to.contain(row);
  });
});

describe('compat SVG charts and benchmark section', () => {
  it('picks nice axis scales and short labels', () => {
    expect(niceScale(87)).to.deep.equal({ max: 100, step: 20 });
    expect(niceScale(0)).to.deep.equal({ max: 1, step: 0.2 });
    expect(niceScale(1200)).to.deep.equal({ max: 1250, step: 250 });
    expect([formatNumber(1500), formatNumber(2_500_000), formatNumber(0.5)]).to.deep.equal(['1.5k', '2.5M', '0.5']);
  });

  it('draws grouped bars: one rect per point, heights proportional, names escaped', () => {
    const svg = renderChart({
      kind: 'bar',
      title: 'records/s <acks>',
      width: 400,
      height: 300,
      series: [
        {
          name: 'kafkajs',
          points: [
            { x: 'none', y: 50 },
            { x: 'gzip', y: 100 },
          ],
        },
        { name: 'librdkafka & co', points: [{ x: 'none', y: 25 }] },
      ],
    });
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg" width="400" height="300"')).to.equal(true);
    expect(svg).to.contain('records/s &lt;acks&gt;').and.contain('librdkafka &amp; co');
    const bars = [...svg.matchAll(/<rect x="[\d.]+" y="([\d.]+)" width="[\d.]+" height="([\d.]+)" fill="[^"]+"><title>/g)].map((m) =>
      Number(m[2]),
    );
    expect(bars).to.have.length(3);
    // plot height 190 px (300 - 40 - 70), axis max 100: 50 → 95 px, 25 → 47.5 px, 100 → 190 px
    expect(bars).to.deep.equal([95, 47.5, 190]);
    expect(renderChart({ kind: 'bar', title: 't', series: [] })).to.equal(renderChart({ kind: 'bar', title: 't', series: [] }));
  });

  it('draws lines with numeric x', () => {
    const svg = renderChart({
      kind: 'line',
      title: 'cpu',
      series: [
        {
          name: 'idle',
          points: [
            { x: 1000, y: 1 },
            { x: 10000, y: 2 },
          ],
        },
      ],
    });
    expect(svg.match(/<polyline/g)).to.have.length(1);
    expect(svg.match(/<circle/g)).to.have.length(2);
    expect(svg).to.contain('>10k</text>');
  });

  it('renders bench/*.json into the report with SVG files, and lists invalid ones', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gregor-compat-report-'));
    try {
      mkdirSync(join(dir, 'bench'));
      const bench = {
        schema: BENCH_SCHEMA,
        id: 'producer',
        title: 'Producer throughput',
        headline: ['kafkajs 100k records/s'],
        charts: [{ kind: 'bar', title: 'rec/s', series: [{ name: 'kafkajs', points: [{ x: 'none', y: 1 }] }] }],
        table: { columns: ['client', 'rec/s'], rows: [['kafkajs', 1]] },
      };
      expect(validateBench(bench)).to.deep.equal([]);
      writeFileSync(join(dir, 'bench/producer.json'), JSON.stringify(bench));
      writeFileSync(join(dir, 'bench/broken.json'), JSON.stringify({ schema: 'x' }));
      const results: ResultsFile = {
        schema: RESULTS_SCHEMA,
        startedAt: 'a',
        finishedAt: 'b',
        durationMs: 1,
        machine: {
          node: 'v20',
          os: { type: 'Linux', platform: 'linux', release: '6', arch: 'x64' },
          cpu: { model: 'cpu', cores: 1 },
          memoryBytes: 2 ** 30,
        },
        broker: { kind: 'external', bootstrap: 'h:1', version: 'unknown', apiVersions: [] },
        clients: [{ id: 'c', title: 'C', description: 'd', versions: {} }],
        scenarios: [{ id: 's', title: 'S', description: 'd' }],
        cells: [{ scenario: 's', client: 'c', outcome: 'fail', reason: 'boom | bad', durationMs: 1 }],
        summary: { pass: 0, fail: 1, 'unsupported-client': 0, 'unsupported-broker': 0, 'needs-gregor': 0 },
      };
      // --compare reads files of the previous schema (no broker.cluster) and refuses unknown ones
      const olderFile = {
        ...results,
        schema: 'gregor-compat-results/1',
        cells: [{ scenario: 's', client: 'c', outcome: 'pass', durationMs: 1 }],
      };
      const older = parseResults(JSON.stringify(olderFile), 'older.json');
      expect(older.schema).to.equal(RESULTS_SCHEMA);
      expect(() => parseResults(JSON.stringify({ ...olderFile, schema: 'gregor-compat-results/0' }), 'x.json')).to.throw(
        'x.json: schema gregor-compat-results/0, expected gregor-compat-results/2 or gregor-compat-results/1',
      );
      const text = writeReport(dir, results, older);
      expect(text).to.contain('| S | ✗ · ✓ |');
      expect(text).to.contain('- **s × c**: boom \\| bad');
      expect(text).to.contain('![rec/s](bench/producer-0.svg)');
      expect(text).to.contain('- **kafkajs 100k records/s**');
      expect(text).to.contain('`bench/broken.json` was not shown: schema must be');
      expect(readFileSync(join(dir, 'bench/producer-0.svg'), 'utf8')).to.contain('<svg');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
