/**
 * `npm run soak -- --minutes N`: the long mixed-client run of issue 17 (compat/soak/run.ts). Prints
 * the verdicts; exits 1 when a record check fails (lost, duplicated, misplaced records), and with
 * --strict also when RSS or fds trend upwards or the event-loop delay p99 is 20 ms or more. When a
 * librdkafka client did not close, exiting would hang in its threads: the process kills itself.
 */
import { Command, InvalidArgumentError } from 'commander';
import { resolve } from 'node:path';
import { ROOT } from '../lib/paths.js';
import { SOAK_DEFAULTS, describeSoak, runSoak, type SoakOptions } from './run.js';

const positive = (v: string): number => {
  const n = Number(v);
  if (!(Number.isFinite(n) && n > 0)) throw new InvalidArgumentError('a positive number');
  return n;
};

const program = new Command('soak')
  .description('long mixed-client soak of a child gregor broker, with a record-fate checker and resource sampling')
  .option('--minutes <n>', 'how long the load runs', positive, SOAK_DEFAULTS.minutes)
  .option('--rate <n>', 'records per second over all ten producers', positive, SOAK_DEFAULTS.rate)
  .option('--record-bytes <n>', 'bytes per record value', positive, SOAK_DEFAULTS.recordBytes)
  .option('--sample-seconds <n>', 'sampling period', positive, SOAK_DEFAULTS.sampleSeconds)
  .option('--churn-seconds <n>', 'period of a group member joining or leaving', positive, SOAK_DEFAULTS.churnSeconds)
  .option('--admin-seconds <n>', 'period of a round of admin calls', positive, SOAK_DEFAULTS.adminSeconds)
  .option('--out <dir>', 'where the JSON and SVG go', resolve(ROOT, SOAK_DEFAULTS.outDir))
  .option('--broker-log <file>', "append the broker's output (LOG_LEVEL=warn) to this file")
  .option('--strict', 'exit 1 also when a resource criterion fails', false);

program.parse();
const { out, strict, ...o } = program.opts<Omit<SoakOptions, 'outDir' | 'log'> & { out: string; strict: boolean }>();

const summary = await runSoak({ ...o, outDir: out });
process.stdout.write(describeSoak(summary) + '\n');
const c = summary.criteria;
const code = !c.records || (strict && !(c.rssFlat && c.fdsFlat && c.loopDelayP99Under20Ms)) ? 1 : 0;
const stuck = summary.problems['disconnect-timeout'];
if (stuck !== undefined) {
  // a librdkafka client that did not close keeps threads that the exit would wait for forever
  process.stderr.write(
    `soak: ${stuck.count} librdkafka client(s) did not close (${stuck.examples.join(', ')}); ending with SIGKILL instead of exit code ${code}\n`,
  );
  process.kill(process.pid, 'SIGKILL');
}
process.exit(code);
