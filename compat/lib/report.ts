/** REPORT.md: the matrix (optionally beside an older run), every non-pass reason, details, benchmarks. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadBenches } from './bench.js';
import type { ResultsFile } from './results.js';
import { symbol } from './runner.js';
import { renderChart } from './svg-chart.js';
import type { CellResult } from './types.js';

const LABEL: Record<CellResult['outcome'], string> = {
  pass: 'pass',
  fail: 'FAIL',
  'unsupported-client': 'not supported by client',
  'unsupported-broker': 'not implemented by broker',
  'needs-gregor': 'needs gregor-managed broker',
};

const cell = (r: ResultsFile, scenario: string, client: string) => r.cells.find((c) => c.scenario === scenario && c.client === client);
const md = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
const brokerName = (r: ResultsFile) =>
  r.broker.kind === 'external'
    ? `external broker at ${r.broker.bootstrap}`
    : r.broker.cluster !== undefined
      ? `${r.broker.cluster.brokers}-broker gregor cluster ${r.broker.version}`
      : `single-node gregor ${r.broker.version}`;

function matrix(r: ResultsFile, older?: ResultsFile): string[] {
  const lines: string[] = [];
  lines.push(`| scenario | ${r.clients.map((c) => md(c.title)).join(' | ')} |`);
  lines.push(`|---|${r.clients.map(() => ':-:').join('|')}|`);
  for (const s of r.scenarios) {
    const cols = r.clients.map((c) => {
      const now = cell(r, s.id, c.id);
      const mark = now === undefined ? ' ' : symbol(now.outcome);
      if (older === undefined) return mark;
      const then = cell(older, s.id, c.id);
      return `${mark} · ${then === undefined ? '?' : symbol(then.outcome)}`;
    });
    lines.push(`| ${md(s.title)} | ${cols.join(' | ')} |`);
  }
  return lines;
}

function machineLine(r: ResultsFile): string {
  const m = r.machine;
  return `Node ${m.node}, ${m.os.type} ${m.os.release} (${m.os.arch}), ${m.cpu.model} × ${m.cpu.cores}, ${(m.memoryBytes / 2 ** 30).toFixed(1)} GiB`;
}

export function writeReport(runDir: string, r: ResultsFile, older?: ResultsFile): string {
  const L: string[] = [];
  const s = r.summary;
  L.push('# gregor compatibility report', '');
  L.push(`Run ${r.startedAt} (${(r.durationMs / 1000).toFixed(0)} s) against **${brokerName(r)}** (${r.broker.bootstrap}).`);
  L.push(`Machine: ${machineLine(r)}.`, '');
  L.push(
    `**${s.pass} passed, ${s.fail} failed**, ${s['unsupported-client']} not supported by the client, ${s['unsupported-broker']} not implemented by the broker, ${s['needs-gregor']} needing a gregor-managed broker.`,
    '',
  );
  L.push('## Matrix', '');
  L.push('✓ pass · ✗ fail · — did not run (the reason is listed below the table).');
  if (older !== undefined)
    L.push(`Each cell: **this run** (${brokerName(r)}, ${r.startedAt}) · **compared run** (${brokerName(older)}, ${older.startedAt}).`);
  L.push('', ...matrix(r, older), '');

  const failures = r.cells.filter((c) => c.outcome === 'fail');
  L.push('## Failures', '');
  if (failures.length === 0) L.push('None.');
  for (const f of failures) L.push(`- **${f.scenario} × ${f.client}**: ${md(f.reason ?? '(no reason)')}`);
  L.push('');
  L.push('## Cells that did not run', '');
  const skipped = r.cells.filter((c) => c.outcome !== 'pass' && c.outcome !== 'fail');
  if (skipped.length === 0) L.push('None.');
  for (const c of skipped) L.push(`- ${c.scenario} × ${c.client} — ${LABEL[c.outcome]}: ${md(c.reason ?? '')}`);
  L.push('');

  if (older !== undefined) {
    L.push('## Differences from the compared run', '');
    const diffs = r.cells.filter((c) => cell(older, c.scenario, c.client)?.outcome !== c.outcome);
    if (diffs.length === 0) L.push('None.');
    for (const c of diffs) {
      const o = cell(older, c.scenario, c.client);
      L.push(
        `- ${c.scenario} × ${c.client}: ${o === undefined ? 'absent' : `${LABEL[o.outcome]}${o.reason !== undefined ? ` (${md(o.reason)})` : ''}`} → ${LABEL[c.outcome]}${c.reason !== undefined ? ` (${md(c.reason)})` : ''}`,
      );
    }
    L.push('');
  }

  L.push('## Scenarios', '');
  for (const sc of r.scenarios) {
    L.push(`### ${sc.title} (\`${sc.id}\`)`, '', sc.description, '');
    for (const c of r.cells.filter((x) => x.scenario === sc.id)) {
      const text = c.outcome === 'pass' ? (c.details ?? '') : `${LABEL[c.outcome]}: ${c.reason ?? ''}`;
      L.push(`- ${symbol(c.outcome)} **${c.client}** (${(c.durationMs / 1000).toFixed(1)} s): ${md(text)}`);
    }
    L.push('');
  }

  L.push('## Clients', '', '| column | what it is | versions |', '|---|---|---|');
  for (const c of r.clients)
    L.push(
      `| ${md(c.title)} (\`${c.id}\`) | ${md(c.description)} | ${md(
        Object.entries(c.versions)
          .map(([k, v]) => `${k} ${v}`)
          .join(', '),
      )} |`,
    );
  L.push('');
  L.push('## Broker under test', '');
  L.push(
    `${brokerName(r)} at ${r.broker.bootstrap}. Advertised APIs: ${r.broker.apiVersions.map((a) => `${a.name} ${a.minVersion}-${a.maxVersion}`).join(', ')}.`,
  );
  const c = r.broker.cluster;
  if (c !== undefined)
    L.push(
      '',
      `${c.brokers} brokers (${c.nodes.map((n) => `node ${n.nodeId} at ${n.bootstrap}`).join(', ')}) sharing their metadata through ${c.metadataStore}, each started with ${Object.entries(
        c.overrides,
      )
        .map(([k, v]) => `\`${k}=${v}\``)
        .join(', ')}.`,
    );
  if (r.broker.legacy !== undefined)
    L.push(
      '',
      `Legacy broker (broker.version.emulate=${r.broker.legacy.emulate}) at ${r.broker.legacy.bootstrap}: ${r.broker.legacy.apiVersions.map((a) => `${a.name} ${a.minVersion}-${a.maxVersion}`).join(', ')}.`,
    );
  L.push('');

  L.push('## Benchmarks', '');
  const benches = loadBenches(runDir);
  if (benches.length === 0)
    L.push('No benchmark results in this run (`npm run compat -- --bench` writes them to `bench/*.json`; format in compat/README.md).');
  for (const b of benches) {
    if (b.bench === undefined) {
      L.push(`- \`bench/${b.file}\` was not shown: ${b.problems.join('; ')}`);
      continue;
    }
    const bench = b.bench;
    L.push(`### ${bench.title}`, '');
    if (bench.description !== undefined) L.push(bench.description, '');
    for (const h of bench.headline ?? []) L.push(`- **${h}**`);
    if ((bench.headline ?? []).length > 0) L.push('');
    (bench.charts ?? []).forEach((chart, i) => {
      const name = `${bench.id}-${i}.svg`;
      writeFileSync(join(runDir, 'bench', name), renderChart(chart));
      L.push(`![${md(chart.title)}](bench/${name})`, '');
    });
    if (bench.table !== undefined) {
      L.push(`| ${bench.table.columns.map(md).join(' | ')} |`, `|${bench.table.columns.map(() => '---').join('|')}|`);
      for (const row of bench.table.rows) L.push(`| ${row.map((v) => (v === null ? '' : md(String(v)))).join(' | ')} |`);
      L.push('');
    }
    for (const n of bench.notes ?? []) L.push(`> ${n}`);
    if (bench.machine !== undefined)
      L.push('', `Measured on Node ${bench.machine.node}, ${bench.machine.cpu.model} × ${bench.machine.cpu.cores}.`);
    L.push('');
  }
  const text = L.join('\n');
  writeFileSync(join(runDir, 'REPORT.md'), text);
  return text;
}
