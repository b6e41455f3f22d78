/**
 * `npm run compat [-- --clients a,b --scenarios x,y --bootstrap host:port | --cluster N [--cluster-dir DIR] --bench --out DIR --compare FILE --security]`
 * Runs the compatibility matrix against one gregor, a gregor cluster of N brokers on an etcd
 * (--cluster N), or a running broker (--bootstrap), and writes compat/results/<timestamp>/{results.json,REPORT.md}.
 * Exits 1 when a cell that should pass fails, 2 on bad arguments.
 */
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { SCENARIOS } from './scenarios/index.js';
import { CLIENTS } from './lib/clients.js';
import { RESULTS_DIR } from './lib/paths.js';
import { runSuite } from './lib/suite.js';
import { runSecurityMatrix, securityReport, startSecurityBroker } from './security/matrix.js';
import { appendFileSync, writeFileSync } from 'node:fs';

function pick<T extends { id: string }>(all: T[], list: string | undefined, what: string): T[] {
  if (list === undefined || list === '') return all;
  const ids = list.split(',').map((s) => s.trim());
  const unknown = ids.filter((id) => !all.some((x) => x.id === id));
  if (unknown.length > 0) {
    console.error(`unknown ${what}: ${unknown.join(', ')} (known: ${all.map((x) => x.id).join(', ')})`);
    process.exit(2);
  }
  return all.filter((x) => ids.includes(x.id));
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      clients: { type: 'string' },
      scenarios: { type: 'string' },
      bootstrap: { type: 'string' },
      cluster: { type: 'string' },
      'cluster-dir': { type: 'string' },
      bench: { type: 'boolean', default: false },
      out: { type: 'string' },
      compare: { type: 'string' },
      security: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    console.log(
      'npm run compat -- [--clients a,b] [--scenarios x,y] [--bootstrap host:port | --cluster N [--cluster-dir DIR]] [--bench] [--out DIR] [--compare older/results.json] [--security]',
    );
    console.log(`clients: ${CLIENTS.map((c) => c.id).join(', ')}\nscenarios: ${SCENARIOS.map((s) => s.id).join(', ')}`);
    return 0;
  }
  const cluster = values.cluster !== undefined ? Number(values.cluster) : undefined;
  if (cluster !== undefined && (!Number.isInteger(cluster) || cluster < 1 || values.bootstrap !== undefined)) {
    console.error('--cluster takes a number of brokers (1 or more) and excludes --bootstrap');
    return 2;
  }
  if (values['cluster-dir'] !== undefined && cluster === undefined) {
    console.error('--cluster-dir needs --cluster N');
    return 2;
  }
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const outDir = values.out !== undefined ? resolve(values.out) : join(RESULTS_DIR, stamp);
  const t0 = Date.now();
  const run = await runSuite({
    scenarios: pick(SCENARIOS, values.scenarios, 'scenario'),
    clients: pick(CLIENTS, values.clients, 'client'),
    ...(values.bootstrap !== undefined ? { bootstrap: values.bootstrap } : {}),
    ...(cluster !== undefined ? { cluster } : {}),
    ...(values['cluster-dir'] !== undefined ? { clusterDir: resolve(values['cluster-dir']) } : {}),
    ...(values.compare !== undefined ? { compare: resolve(values.compare) } : {}),
    bench: values.bench,
    outDir,
  });
  let securityFailed = 0;
  if (values.security) {
    // the security section needs listeners the suite configures: an in-process gregor of its own
    const sb = await startSecurityBroker();
    try {
      const cells = await runSecurityMatrix(sb, { log: (line) => console.log(line) });
      securityFailed = cells.filter((c) => c.outcome === 'fail').length;
      writeFileSync(join(outDir, 'security.json'), JSON.stringify(cells, null, 2) + '\n');
      appendFileSync(join(outDir, 'REPORT.md'), '\n' + securityReport(cells));
    } finally {
      await sb.stop();
    }
  }
  const s = run.results.summary;
  console.log(
    `\n${s.pass} passed, ${s.fail} failed, ${s['unsupported-client'] + s['unsupported-broker'] + s['needs-gregor']} did not run — ${((Date.now() - t0) / 1000).toFixed(1)} s`,
  );
  console.log(`report: ${join(outDir, 'REPORT.md')}`);
  if (securityFailed > 0) console.log(`security section: ${securityFailed} cell(s) failed`);
  return s.fail > 0 || securityFailed > 0 ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
