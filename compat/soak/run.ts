/**
 * One soak run: a child broker with small segments, retention, roll and a compacted topic; the
 * producers, churning groups and admin traffic of producers.ts, groups.ts and admin.ts for the given
 * minutes while the sampler watches the broker; then the groups catch up, the final read, the
 * ledger's verdict and the resource verdicts, written as JSON and SVG.
 */
import { appendFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { asError } from '../../lib/as-error.js';
import { startChildBroker, tempDir } from '../../test/helpers/broker.js';
import { benchMachine, sleep } from '../bench/proc-stats.js';
import { adminChurn, adminClient, createSoakTopics, finalRead, waitForGroup, watermarks } from './admin.js';
import { kafkajsGroup, rdkafkaGroup } from './groups.js';
import { Ledger, TopicKind, type Verdict } from './ledger.js';
import { renderSoakPlot } from './plot.js';
import { hungLibrdkafkaDisconnects, producers, type SoakTopic, type WorkloadContext, type Worker } from './producers.js';
import {
  Sampler,
  describeFdKinds,
  fdVerdict,
  loopDelay,
  rssAfterFullGc,
  trend,
  type FdKinds,
  type FdVerdict,
  type LoopDelayVerdict,
  type Sample,
  type Trend,
  type TroughTrend,
} from './sampler.js';
import { Watchdog } from './watchdog.js';

export interface SoakOptions {
  minutes: number;
  /** records per second over all producers */
  rate: number;
  recordBytes: number;
  sampleSeconds: number;
  churnSeconds: number;
  adminSeconds: number;
  outDir: string;
  /** a file to append the broker's stdout and stderr to */
  brokerLog?: string;
  /** progress lines (default: stderr) */
  log?: (line: string) => void;
}

export const SOAK_DEFAULTS: SoakOptions = {
  minutes: 60,
  rate: 200,
  recordBytes: 200,
  sampleSeconds: 5,
  churnSeconds: 20,
  adminSeconds: 10,
  outDir: 'compat/results',
};

export interface SoakSummary {
  schema: 'gregor-soak/1';
  startedAt: string;
  options: Omit<SoakOptions, 'log'>;
  machine: ReturnType<typeof benchMachine>;
  broker: { overrides: Record<string, string>; topics: SoakTopic[] };
  records: Verdict & { finalReadRecords: number; finalReadComplete: boolean; groupsCaughtUp: Record<string, boolean> };
  admin: { calls: number; deleteRecords: number };
  problems: Record<string, { count: number; examples: string[] }>;
  brokerWarnings: { count: number; last: string[] };
  resources: {
    samples: number;
    /** `afterFullGc`, when there is one, decides the verdict (rssAfterFullGc says why); else the slope */
    rss: Trend & { firstMB: number; lastMB: number; maxMB: number; afterFullGc: TroughTrend | null };
    fds: Trend & {
      first: number;
      last: number;
      max: number;
      segmentFilesLast: number;
      segmentsHeldLast: number;
      kindsLast: FdKinds | null;
      verdict: FdVerdict;
    };
    heapUsedLastMB: number;
    activeHandlesLast: number;
    loopDelay: LoopDelayVerdict;
    cpuPercentMean: number;
  };
  criteria: { records: boolean; rssFlat: boolean; fdsFlat: boolean; loopDelayP99Under20Ms: boolean };
  samples: Sample[];
  files: { json: string; svg: string };
}

export const SOAK_BROKER_OVERRIDES: Record<string, string> = {
  'admin.listener': '127.0.0.1:0',
  'group.initial.rebalance.delay.ms': '0',
  'log.retention.check.interval.ms': '5000',
  'log.roll.ms': '120000',
  'log.segment.bytes': '1048576',
  'log.cleaner.backoff.ms': '2000',
  'offsets.topic.num.partitions': '3',
};

export const SOAK_TOPICS: readonly SoakTopic[] = [
  { name: 'soak-keep', kind: TopicKind.keep, partitions: 3, configs: { 'segment.bytes': '1048576' } },
  {
    name: 'soak-retained',
    kind: TopicKind.retained,
    partitions: 3,
    configs: { 'segment.bytes': '32768', 'segment.ms': '20000', 'retention.bytes': '131072', 'retention.ms': '90000' },
  },
  {
    name: 'soak-compacted',
    kind: TopicKind.compacted,
    partitions: 2,
    configs: { 'cleanup.policy': 'compact', 'segment.bytes': '32768', 'segment.ms': '15000', 'min.cleanable.dirty.ratio': '0.01' },
  },
];

const MB = 1024 * 1024;
/** a client without progress this long (at least three churn periods) is reported as stalled */
const STALL_SECONDS = 60;

export async function runSoak(opts: SoakOptions): Promise<SoakSummary> {
  const log = opts.log ?? ((line: string) => process.stderr.write(line + '\n'));
  const startedAt = new Date();
  const ledger = new Ledger();
  for (const t of SOAK_TOPICS) ledger.topic(t.name, t.kind);
  const problems: Record<string, { count: number; examples: string[] }> = {};
  const problem = (kind: string, detail: string): void => {
    const p = (problems[kind] ??= { count: 0, examples: [] });
    p.count++;
    if (p.examples.length < 10) p.examples.push(detail);
  };
  const warnings = { count: 0, last: [] as string[] };
  const dataDir = tempDir('gregor-soak-');
  const broker = await startChildBroker(dataDir, 0, SOAK_BROKER_OVERRIDES, { LOG_LEVEL: 'warn' });
  if (opts.brokerLog !== undefined) {
    const file = opts.brokerLog;
    const append = (d: Buffer): void => appendFileSync(file, d);
    broker.child.stdout?.on('data', append);
    broker.child.stderr?.on('data', append);
  }
  broker.child.stdout?.on('data', (d: Buffer) => {
    for (const line of d.toString().split('\n')) {
      if (!/"level":(40|50|60)/.test(line)) continue;
      warnings.count++;
      warnings.last.push(line.slice(0, 400));
      if (warnings.last.length > 20) warnings.last.shift();
    }
  });
  const pid = broker.child.pid;
  if (pid === undefined || broker.admin === null) throw new Error('the soak broker has no pid or admin listener');
  let stopped = false;
  let groupsDone = false;
  let watchdog: Watchdog | null = null;
  const adminStats = { adminCalls: 0, deleteRecords: 0 };
  const groupNames = ['soak-kafkajs', 'soak-librdkafka'];
  const groupTopics = SOAK_TOPICS.filter((t) => t.kind !== TopicKind.compacted);
  const producerCount = 10;
  const ctx: WorkloadContext = {
    bootstrap: broker.bootstrap,
    ledger,
    topics: SOAK_TOPICS,
    ratePerProducer: opts.rate / producerCount,
    recordBytes: opts.recordBytes,
    problem,
    stopped: () => stopped,
  };
  const admin = adminClient(broker.bootstrap);
  try {
    await admin.connect();
    await createSoakTopics(admin, SOAK_TOPICS);
    const groupOpts = (group: string) => ({
      group,
      topics: groupTopics.map((t) => t.name),
      maxMembers: 3,
      churnMs: opts.churnSeconds * 1000,
    });
    const producerWorkers = producers(ctx);
    const others = [
      kafkajsGroup(ctx, groupOpts('soak-kafkajs'), () => groupsDone),
      rdkafkaGroup(ctx, groupOpts('soak-librdkafka'), () => groupsDone),
      adminChurn(ctx, groupNames, opts.adminSeconds * 1000, adminStats),
    ];
    if (producerWorkers.length !== producerCount) throw new Error('producer count changed');
    const running = (ws: typeof others) =>
      ws.map((w) => w.run().catch((e: unknown) => problem('worker-failed', `${w.name}: ${asError(e).stack ?? asError(e).message}`)));
    const producing = running(producerWorkers);
    const rest = running(others);
    watchdog = stallWatchdog(opts, log, problem, ledger, producerWorkers, others, groupTopics, () => stopped || groupsDone);
    watchdog.start(5000);
    const consumedSoFar = () => groupNames.reduce((n, g) => n + ledger.groupDeliveries(g), 0);
    const sampler = new Sampler(pid, broker.admin, dataDir, () => ({ acked: ledger.counts().acked, consumed: consumedSoFar() }));
    const end = performance.now() + opts.minutes * 60_000;
    let lastLog = performance.now();
    while (performance.now() < end) {
      await sleep(Math.min(opts.sampleSeconds * 1000, Math.max(0, end - performance.now())));
      try {
        const s = await sampler.sample();
        if (performance.now() - lastLog >= 60_000) {
          lastLog = performance.now();
          log(
            `soak t=${Math.round(s.t)}s acked=${s.acked} consumed=${s.consumed} rss=${(s.rssBytes / MB).toFixed(1)}MB heap=${(s.heapUsedBytes / MB).toFixed(1)}MB fds=${s.fds} (${describeFdKinds(s.fdKinds)}; segments held ${s.brokerSegments}, segment .log files on disk ${s.segmentFiles}) handles=${s.activeHandles} loopP99=${s.loopDelayP99Ms.toFixed(1)}ms cpu=${s.cpuPercent}%`,
          );
        }
      } catch (e) {
        problem('sample-failed', asError(e).message);
      }
    }
    stopped = true;
    log('soak: load stopped; flushing producers, waiting for the groups to catch up');
    // a producer that never finishes (seen once in a 16-minute run) must not hold up the verdict
    const drained = await Promise.race([Promise.all(producing).then(() => true), sleep(180_000).then(() => false)]);
    if (!drained) {
      const stuck = producerWorkers.filter((w) => w.status?.() !== 'done').map((w) => `${w.name} (${w.status?.() ?? '?'})`);
      problem('producers-stuck', `not flushed and disconnected within 180 s of the stop: ${stuck.join(', ')}`);
      log(`soak: producers stuck after the stop: ${stuck.join(', ')}`);
    }
    const caughtUp: Record<string, boolean> = {};
    for (const g of groupNames) caughtUp[g] = await waitForGroup(admin, g, groupTopics, 180_000);
    groupsDone = true;
    // the groups' last members leave (bounded disconnects) and the admin churn ends
    const left = await Promise.race([Promise.all(rest).then(() => true), sleep(180_000).then(() => false)]);
    if (!left)
      problem(
        'groups-stuck',
        `a group or the admin churn did not finish within 180 s: ${others.map((w) => `${w.name}: ${w.status?.() ?? '?'}`).join('; ')}`,
      );
    log('soak: final read');
    const before = await watermarks(admin, SOAK_TOPICS);
    const read = await finalRead(broker.bootstrap, ledger, SOAK_TOPICS, before, 300_000, problem);
    // retention keeps running during the read: what it removed meanwhile is below the later start offsets
    const after = await watermarks(admin, SOAK_TOPICS);
    const logStartOffsets = new Map<string, number[]>();
    for (const [topic, parts] of after)
      logStartOffsets.set(
        topic,
        parts.map((p) => p.low),
      );
    const verdict = ledger.verdict({ logStartOffsets }, new Map(groupNames.map((g) => [g, groupTopics.map((t) => t.name)])));
    const samples = sampler.samples;
    const rss = trend(samples, (s) => s.rssBytes, 8 * MB);
    const rssFloor = rssAfterFullGc(samples, 8 * MB);
    const fds = trend(samples, (s) => s.fds, 3);
    const fdv = fdVerdict(samples);
    const delay = loopDelay(samples);
    const last = samples[samples.length - 1];
    const first = samples[0];
    const stamp = startedAt.toISOString().replace(/[:.]/g, '-');
    mkdirSync(opts.outDir, { recursive: true });
    const files = { json: join(opts.outDir, `soak-${stamp}.json`), svg: join(opts.outDir, `soak-${stamp}.svg`) };
    const records = { ...verdict, finalReadRecords: read.records, finalReadComplete: read.complete, groupsCaughtUp: caughtUp };
    records.ok = records.ok && read.complete;
    const summary: SoakSummary = {
      schema: 'gregor-soak/1',
      startedAt: startedAt.toISOString(),
      options: {
        minutes: opts.minutes,
        rate: opts.rate,
        recordBytes: opts.recordBytes,
        sampleSeconds: opts.sampleSeconds,
        churnSeconds: opts.churnSeconds,
        adminSeconds: opts.adminSeconds,
        outDir: opts.outDir,
      },
      machine: benchMachine(),
      broker: { overrides: SOAK_BROKER_OVERRIDES, topics: [...SOAK_TOPICS] },
      records,
      admin: { calls: adminStats.adminCalls, deleteRecords: adminStats.deleteRecords },
      problems,
      brokerWarnings: warnings,
      resources: {
        samples: samples.length,
        rss: {
          ...rss,
          firstMB: (first?.rssBytes ?? NaN) / MB,
          lastMB: (last?.rssBytes ?? NaN) / MB,
          maxMB: Math.max(...samples.map((s) => s.rssBytes)) / MB,
          afterFullGc: rssFloor,
        },
        fds: {
          ...fds,
          first: first?.fds ?? NaN,
          last: last?.fds ?? NaN,
          max: Math.max(...samples.map((s) => s.fds)),
          segmentFilesLast: last?.segmentFiles ?? NaN,
          segmentsHeldLast: last?.brokerSegments ?? NaN,
          kindsLast: last?.fdKinds ?? null,
          verdict: fdv,
        },
        heapUsedLastMB: (last?.heapUsedBytes ?? NaN) / MB,
        activeHandlesLast: last?.activeHandles ?? NaN,
        loopDelay: delay,
        cpuPercentMean: samples.reduce((a, s) => a + s.cpuPercent, 0) / Math.max(1, samples.length),
      },
      criteria: { records: records.ok, rssFlat: rssFloor?.flat ?? rss.flat, fdsFlat: fdv.flat, loopDelayP99Under20Ms: delay.ok },
      samples,
      files,
    };
    writeFileSync(files.json, JSON.stringify(summary, null, 2) + '\n');
    writeFileSync(
      files.svg,
      renderSoakPlot(samples, `gregor soak ${opts.minutes} min, ${opts.rate} records/s, ${startedAt.toISOString().slice(0, 16)}Z`),
    );
    return summary;
  } finally {
    watchdog?.stop();
    stopped = true;
    groupsDone = true;
    await admin.disconnect().catch(() => undefined);
    broker.child.kill('SIGTERM');
    const code = await Promise.race([broker.exited, sleep(30_000).then(() => 'timeout' as const)]);
    if (code === 'timeout') {
      broker.child.kill('SIGKILL');
      await broker.exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/**
 * The stall watchdog over the soak's clients: a producer that gets no acknowledgement while the load
 * runs, a group that delivers nothing while its topics get new records, for `STALL_SECONDS`.
 */
function stallWatchdog(
  opts: SoakOptions,
  log: (line: string) => void,
  problem: (kind: string, detail: string) => void,
  ledger: Ledger,
  producerWorkers: readonly Worker[],
  groupWorkers: readonly Worker[],
  groupTopics: readonly SoakTopic[],
  loadOver: () => boolean,
): Watchdog {
  const w = new Watchdog(Math.max(STALL_SECONDS, 3 * opts.churnSeconds) * 1000, (line) => {
    const hung = hungLibrdkafkaDisconnects();
    // hung librdkafka disconnects each hold a libuv threadpool thread (see producers.ts)
    log(
      hung > 0 && line.includes('STALL')
        ? `${line} [${hung} librdkafka disconnect(s) hung, each holding a libuv threadpool thread of ${process.env['UV_THREADPOOL_SIZE'] ?? '4'}]`
        : line,
    );
    if (line.includes('STALL')) problem('stall', line.replace(/^soak: STALL /, ''));
  });
  for (const p of producerWorkers)
    w.watch({
      name: `producer ${p.name}`,
      count: () => ledger.ackedBy(p.name),
      expected: () => !loadOver(),
      detail: () => p.status?.() ?? '',
    });
  const topics = groupTopics.map((t) => t.name);
  for (const g of groupWorkers.filter((x) => x.name.startsWith('soak-'))) {
    // behind: its topics got records since its deliveries last moved
    let seen = -1;
    let ackedThen = 0;
    w.watch({
      name: `group ${g.name}`,
      count: () => ledger.groupDeliveries(g.name),
      expected: () => {
        const n = ledger.groupDeliveries(g.name);
        if (n !== seen) {
          seen = n;
          ackedThen = ledger.ackedOn(topics);
        }
        return !loadOver() && ledger.ackedOn(topics) > ackedThen;
      },
      detail: () => g.status?.() ?? '',
    });
  }
  return w;
}

function describeRssFloor(f: TroughTrend | null): string {
  if (f === null) return 'fewer than 3 full collections in the second half, so the verdict is the slope';
  const mb = (b: number): string => (b / MB).toFixed(1);
  return `after full collections ${f.troughs.map((x) => mb(x.rssBytes)).join(', ')} MB; the verdict: their second-half drift ${mb(f.drift)} MB vs allowed ${mb(f.allowed)} MB over ${f.window.samples}`;
}

/** The summary as a few lines for a terminal or a note. */
export function describeSoak(s: SoakSummary): string {
  const r = s.records;
  const res = s.resources;
  const pf = (ok: boolean) => (ok ? 'PASS' : 'FAIL');
  const lines = [
    `records   ${pf(s.criteria.records)}: produced ${r.produced}, acked ${r.acked}, failed sends ${r.failedSends}; lost ${r.lost}, duplicated in log ${r.duplicatedInLog}, offset mismatches ${r.offsetMismatches}, unknown ${r.unknownRecords}; removed by retention ${r.removedByRetention}, by compaction ${r.removedByCompaction}; final read ${r.finalReadRecords} records${r.finalReadComplete ? '' : ' (INCOMPLETE)'}`,
    ...r.groups.map(
      (g) =>
        `  group ${g.group}: ${g.deliveries} deliveries, ${g.rebalances} rebalances, missing ${g.missing}, redelivered after a rebalance ${g.explainedDuplicates}, duplicates without one ${g.unexplainedDuplicates}${s.records.groupsCaughtUp[g.group] === false ? ' (did not catch up)' : ''}`,
    ),
    `rss       ${pf(s.criteria.rssFlat)}: ${res.rss.firstMB.toFixed(1)} -> ${res.rss.lastMB.toFixed(1)} MB (max ${res.rss.maxMB.toFixed(1)}); ${describeRssFloor(res.rss.afterFullGc)}; second-half drift ${(res.rss.drift / MB).toFixed(1)} MB vs allowed ${(res.rss.allowed / MB).toFixed(1)} MB (noise sd ${(res.rss.noise / MB).toFixed(1)} MB, ${(res.rss.slopePerHour / MB).toFixed(1)} MB/h)${res.rss.afterFullGc === null ? '' : ', not the verdict'}`,
    `fds       ${pf(s.criteria.fdsFlat)}: total ${res.fds.first} -> ${res.fds.last} (max ${res.fds.max}; ${res.fds.slopePerHour.toFixed(1)}/h, ${res.fds.segmentFilesLast} segment files and ${res.fds.segmentsHeldLast} segments held at the end; ${res.fds.kindsLast === null ? '' : describeFdKinds(res.fds.kindsLast)}); others second-half drift ${res.fds.verdict.other.drift.toFixed(1)} vs allowed ${res.fds.verdict.other.allowed.toFixed(1)}; unlinked drift ${res.fds.verdict.unlinked.drift.toFixed(1)} vs allowed ${res.fds.verdict.unlinked.allowed.toFixed(1)}; samples with more segment fds than files ${res.fds.verdict.samplesOverFiles}, with more open .log files than segments held ${res.fds.verdict.samplesLogFdsOverSegments}; segment-file fds per segment at the end ${res.fds.verdict.segmentFdsPerSegmentLast.toFixed(2)}`,
    `loop p99  ${pf(s.criteria.loopDelayP99Under20Ms)}: ${res.loopDelay.p99Ms.toFixed(1)} ms (p99 of ${res.samples} interval p99s; median ${res.loopDelay.medianIntervalP99Ms.toFixed(1)}, worst ${res.loopDelay.worstIntervalP99Ms.toFixed(1)}, max delay ${res.loopDelay.maxMs.toFixed(1)} ms, ${res.loopDelay.intervalsOver20Ms} intervals over 20 ms)`,
    `other     heap used ${res.heapUsedLastMB.toFixed(1)} MB, active handles ${res.activeHandlesLast}, broker CPU mean ${res.cpuPercentMean.toFixed(1)}%, admin calls ${s.admin.calls} (DeleteRecords ${s.admin.deleteRecords}), broker warnings ${s.brokerWarnings.count}`,
    ...Object.entries(s.problems).map(([k, p]) => `problem   ${k}: ${p.count} (${p.examples[0] ?? ''})`),
    `files     ${s.files.json}, ${s.files.svg}; load average ${s.machine.loadavg.join(' ')}`,
  ];
  return lines.join('\n');
}
