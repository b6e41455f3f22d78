/**
 * CI's 2-minute soak (compat/soak, `npm run soak -- --minutes N` for long runs): idempotent kafkajs
 * and librdkafka producers with every codec, churning kafkajs and librdkafka groups, admin calls
 * with DeleteRecords, small segments, retention and a compacted topic, against a child broker. No
 * acknowledged record may be lost, duplicated in the log or misplaced, the groups must see every
 * record (redeliveries only after a rebalance), and the sampler must have sampled the broker. The
 * trend and loop-delay criteria are not asserted here: two minutes on a shared machine are too
 * noisy; the tool reports them. The soak runs as its own process (as `npm run soak` does): a
 * librdkafka group member whose close hangs (see the README) would otherwise hang mocha's exit.
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SoakSummary } from '../../compat/soak/run.js';
import { tempDir } from '../helpers/broker.js';
import { PROJECT_ROOT } from '../helpers/project.js';

describe('soak (2 minutes, mixed clients, record-fate checker)', function () {
  this.timeout(12 * 60_000);
  let summary: SoakSummary;
  let exit: { code: number | null; signal: NodeJS.Signals | null };
  let output = '';

  // fails (never skips) when @confluentinc/kafka-javascript is missing, as the other librdkafka suites
  before(async () => {
    const out = tempDir('gregor-soak-out-');
    const args = ['dist/compat/soak/main.js', '--minutes', '2', '--churn-seconds', '15', '--admin-seconds', '8', '--out', out];
    const child = spawn(process.execPath, args, { cwd: PROJECT_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 11 * 60_000);
    exit = await new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
    clearTimeout(timer);
    process.stderr.write(output);
    const json = readdirSync(out).find((f) => /^soak-.*\.json$/.test(f));
    if (json === undefined) throw new Error(`the soak wrote no summary (exit ${JSON.stringify(exit)}):\n${output}`);
    summary = JSON.parse(readFileSync(join(out, json), 'utf8')) as SoakSummary;
  });

  it('loses, duplicates and misplaces no acknowledged record, in the log and in both groups', () => {
    const r = summary.records;
    expect(r.acked).to.be.greaterThan(5000);
    expect({ lost: r.lost, dup: r.duplicatedInLog, mismatch: r.offsetMismatches, unknown: r.unknownRecords }).to.deep.equal({
      lost: 0,
      dup: 0,
      mismatch: 0,
      unknown: 0,
    });
    expect(r.finalReadComplete).to.equal(true);
    expect(r.groups.map((g) => g.group)).to.have.members(['soak-kafkajs', 'soak-librdkafka']);
    for (const g of r.groups) {
      expect(g.missing, `${g.group} missed ${g.missingExamples.join(', ')}`).to.equal(0);
      expect(g.unexplainedDuplicates, `${g.group}: ${g.unexplainedExamples.join(', ')}`).to.equal(0);
      expect(g.rebalances).to.be.greaterThan(2);
    }
    expect(r.ok).to.equal(true);
    // retention, DeleteRecords and compaction really removed records, so their rules were exercised
    expect(r.removedByRetention).to.be.greaterThan(0);
    expect(r.removedByCompaction).to.be.greaterThan(0);
    expect(summary.admin.deleteRecords).to.be.greaterThan(0);
    expect(summary.problems['worker-failed'], JSON.stringify(summary.problems['worker-failed'])).to.equal(undefined);
    // exit 0 (records passed), or the self-kill after a librdkafka client did not close
    if (summary.problems['disconnect-timeout'] === undefined) expect(exit.code, output).to.equal(0);
    else expect(exit.signal).to.equal('SIGKILL');
  });

  it('sampled RSS, heap, handles, fds and loop delay, and wrote the JSON and the SVG plot', () => {
    const s = summary.samples;
    expect(s.length).to.be.at.least(20);
    for (const x of s) {
      expect(x.rssBytes).to.be.greaterThan(10e6);
      expect(x.fds).to.be.greaterThan(10);
      // every segment fd is a segment file's, and the broker always has some segments open
      expect(x.segmentFds).to.be.within(1, x.segmentFiles + 2);
      expect(x.segmentFds + x.unlinkedFds).to.be.at.most(x.fds);
      // the broker's open .log files never outnumber the segments its logs hold (the leak detector)
      expect(x.fdKinds.log, JSON.stringify(x)).to.be.within(1, x.brokerSegments + 2);
      expect(x.fdKinds.socket).to.be.greaterThan(0);
      expect(x.heapUsedBytes).to.be.greaterThan(1e6);
      expect(x.activeHandles).to.be.greaterThan(0);
      expect(Number.isFinite(x.loopDelayP99Ms)).to.equal(true);
    }
    expect(summary.schema).to.equal('gregor-soak/1');
    expect(existsSync(summary.files.svg)).to.equal(true);
    expect(readFileSync(summary.files.svg, 'utf8').match(/<polyline /g)?.length).to.equal(17);
  });
});
