/**
 * The soak's record-fate ledger and resource verdicts (compat/soak): what each topic kind allows to
 * be missing, and that losses, duplicates, misplaced records and unexplained group redeliveries are
 * caught; the least-squares trend and the loop-delay verdict.
 */
import { expect } from 'chai';
import { Ledger, TopicKind, parseRecordValue, recordValue } from '../../compat/soak/ledger.js';
import {
  emptyFdKinds,
  fdKind,
  fdVerdict,
  leastSquares,
  loopDelay,
  parseMetrics,
  rssAfterFullGc,
  sumSeries,
  trend,
  type FdKinds,
  type Sample,
} from '../../compat/soak/sampler.js';
import { renderSoakPlot } from '../../compat/soak/plot.js';

function ledgerWith(kind: TopicKind, n: number, key?: (i: number) => string): Ledger {
  const l = new Ledger();
  l.topic('t', kind);
  for (let i = 0; i < n; i++) l.acked('p', l.sent('p', 't', 0, key?.(i) ?? null), i);
  return l;
}

const fin = (low = 0) => ({ logStartOffsets: new Map([['t', [low]]]) });
const noGroups = new Map<string, readonly string[]>();

describe('compat/soak record-fate ledger', () => {
  it('round-trips the id a record value carries', () => {
    const v = recordValue('rdk-zstd', 4711, 64);
    expect(v.length).to.equal(64);
    expect(parseRecordValue(v)).to.deep.equal({ producer: 'rdk-zstd', seq: 4711 });
    expect(parseRecordValue(Buffer.from('nothing'))).to.equal(null);
  });

  it('passes when every acked record is read once at its offset, and counts failed sends apart', () => {
    const l = ledgerWith(TopicKind.keep, 5);
    l.failed('p', l.sent('p', 't', 0));
    for (let i = 0; i < 5; i++) l.read('t', 0, i, recordValue('p', i, 20));
    const v = l.verdict(fin(), noGroups);
    expect(v).to.include({ ok: true, acked: 5, produced: 6, failedSends: 1, lost: 0 });
  });

  it('catches a lost record, a duplicate, a record at another offset and a record nobody produced', () => {
    const l = ledgerWith(TopicKind.keep, 4);
    l.read('t', 0, 0, recordValue('p', 0, 20));
    l.read('t', 0, 1, recordValue('p', 1, 20));
    l.read('t', 0, 2, recordValue('p', 1, 20)); // duplicate
    l.read('t', 0, 9, recordValue('p', 3, 20)); // misplaced; p|2 lost
    l.read('t', 0, 10, recordValue('x', 0, 20));
    const v = l.verdict(fin(), noGroups);
    expect(v).to.include({ ok: false, lost: 1, duplicatedInLog: 1, offsetMismatches: 1, unknownRecords: 1 });
    expect(v.lostExamples[0]).to.match(/^p\|2 /);
  });

  it('lets retention remove what lies below the final logStartOffset, and nothing above it', () => {
    const l = ledgerWith(TopicKind.retained, 6);
    for (const i of [3, 5]) l.read('t', 0, i, recordValue('p', i, 20));
    const v = l.verdict(fin(3), noGroups);
    expect(v).to.include({ removedByRetention: 3, lost: 1, ok: false });
    expect(v.lostExamples[0]).to.match(/^p\|4 /);
  });

  it('lets compaction remove all but the last acked record of each key', () => {
    const l = ledgerWith(TopicKind.compacted, 6, (i) => `k${i % 2}`); // k0: 0 2 4, k1: 1 3 5
    l.read('t', 0, 4, recordValue('p', 4, 20));
    l.read('t', 0, 5, recordValue('p', 5, 20));
    expect(l.verdict(fin(), noGroups)).to.include({ ok: true, removedByCompaction: 4 });
    const l2 = ledgerWith(TopicKind.compacted, 6, (i) => `k${i % 2}`);
    l2.read('t', 0, 3, recordValue('p', 3, 20));
    l2.read('t', 0, 4, recordValue('p', 4, 20));
    expect(l2.verdict(fin(), noGroups)).to.include({ ok: false, lost: 1 });
  });

  it('holds groups to at-least-once: a missing record fails, a redelivery passes only after a rebalance', () => {
    const l = ledgerWith(TopicKind.keep, 3);
    for (let i = 0; i < 3; i++) l.read('t', 0, i, recordValue('p', i, 20));
    const groups = new Map([['g', ['t']]]);
    l.consumed('g', 't', 0, 0, recordValue('p', 0, 20));
    l.consumed('g', 't', 0, 1, recordValue('p', 1, 20));
    let v = l.verdict(fin(), groups);
    expect(v.groups[0]).to.include({ missing: 1, unexplainedDuplicates: 0 });
    l.rebalanced('g');
    l.consumed('g', 't', 0, 1, recordValue('p', 1, 20)); // redelivered after a rebalance
    l.consumed('g', 't', 0, 2, recordValue('p', 2, 20));
    v = l.verdict(fin(), groups);
    expect(v.ok).to.equal(true);
    expect(v.groups[0]).to.include({ missing: 0, explainedDuplicates: 1, unexplainedDuplicates: 0 });
    l.consumed('g', 't', 0, 2, recordValue('p', 2, 20)); // again, no rebalance in between
    v = l.verdict(fin(), groups);
    expect(v.ok).to.equal(false);
    expect(v.groups[0]).to.include({ unexplainedDuplicates: 1 });
  });
});

function samples(ys: (i: number) => Partial<Sample>, n = 40): Sample[] {
  return Array.from({ length: n }, (_, i) => ({
    t: i * 5,
    rssBytes: 100e6,
    fds: 50,
    segmentFds: 10,
    unlinkedFds: 0,
    segmentFiles: 10,
    brokerSegments: 10,
    fdKinds: { ...emptyFdKinds(), log: 10, socket: 30, otherFile: 10 },
    cpuPercent: 5,
    heapUsedBytes: 20e6,
    heapTotalBytes: 30e6,
    externalBytes: 5e6,
    activeHandles: 20,
    loopDelayP50Ms: 10,
    loopDelayP99Ms: 12,
    loopDelayMaxMs: 15,
    acked: i * 100,
    consumed: i * 90,
    ...ys(i),
  }));
}

describe('compat/soak resource verdicts', () => {
  it('fits a least-squares line', () => {
    const f = leastSquares([0, 1, 2, 3], [1, 3, 5, 7]);
    expect(f.slope).to.be.closeTo(2, 1e-9);
    expect(f.intercept).to.be.closeTo(1, 1e-9);
    expect(f.residualSd).to.be.closeTo(0, 1e-9);
  });

  it('calls noise flat and a steady climb over the second half a trend', () => {
    const noisy = trend(
      samples((i) => ({ fds: 50 + (i % 3) - 1 })),
      (s) => s.fds,
      3,
    );
    expect(noisy.flat).to.equal(true);
    const leak = trend(
      samples((i) => ({ fds: 50 + i })),
      (s) => s.fds,
      3,
    );
    expect(leak.flat).to.equal(false);
    expect(leak.drift).to.be.closeTo(19, 1e-6); // 1 fd per 5 s over the 95 s of the second half
    expect(
      trend(
        samples((i) => ({ rssBytes: 100e6 - i * 1e6 })),
        (s) => s.rssBytes,
        8e6,
      ).flat,
    ).to.equal(true);
  });

  it('judges RSS by its floor after full collections, which a saw-tooth does not move and a leak raises', () => {
    // every 10th sample a full collection: heapTotal 90 MB -> 30 MB; RSS climbs 3 MB a sample between them
    const sawTooth = (leakPerCycle: number) =>
      samples(
        (i) => ({
          heapTotalBytes: i % 10 === 0 ? 30e6 : 90e6,
          rssBytes: 150e6 + (i % 10) * 3e6 + Math.floor(i / 10) * leakPerCycle,
        }),
        80,
      );
    const flat = sawTooth(0);
    const floor = rssAfterFullGc(flat, 8e6);
    expect(floor?.troughs.map((x) => x.rssBytes)).to.deep.equal([150e6, 150e6, 150e6, 150e6, 150e6, 150e6, 150e6]);
    expect(floor?.window.samples).to.equal(4); // t >= 200 s: samples 40, 50, 60, 70
    expect(floor?.flat).to.equal(true);
    // 5 MB more after every collection: 15 MB over the second half's troughs, past the 8 MB floor
    const leak = rssAfterFullGc(sawTooth(5e6), 8e6);
    expect(leak?.drift).to.be.closeTo(15e6, 1);
    expect(leak?.flat).to.equal(false);
    // no collection in the second half: no floor to judge, the slope verdict stands
    expect(
      rssAfterFullGc(
        samples(() => ({})),
        8e6,
      ),
    ).to.equal(null);
  });

  it('judges fds by the ones that are not segment files, the unlinked ones, and segment fds against segment files and segments held', () => {
    const kinds = (k: Partial<FdKinds>): FdKinds => ({ ...emptyFdKinds(), log: 10, socket: 30, otherFile: 10, ...k });
    // the total climbing with the segments is not a leak
    const growing = fdVerdict(
      samples((i) => ({ fds: 50 + i, segmentFds: 10 + i, segmentFiles: 10 + i, brokerSegments: 10 + i, fdKinds: kinds({ log: 10 + i }) })),
    );
    expect(growing.flat).to.equal(true);
    expect(growing.segmentFdsPerSegmentLast).to.equal(1);
    const sockets = fdVerdict(samples((i) => ({ fds: 50 + i, fdKinds: kinds({ socket: 30 + i }) })));
    expect(sockets.flat).to.equal(false);
    expect(sockets.other.drift).to.be.closeTo(19, 1e-6);
    const unlinked = fdVerdict(samples((i) => ({ fds: 50 + i, unlinkedFds: i, fdKinds: kinds({ unlinked: i }) })));
    expect(unlinked).to.deep.include({ flat: false, samplesOverFiles: 0, samplesLogFdsOverSegments: 0 });
    expect(unlinked.other.flat).to.equal(true);
    const overFiles = fdVerdict(samples((i) => ({ segmentFds: i === 7 ? 13 : 10 })));
    expect(overFiles).to.deep.include({ flat: false, samplesOverFiles: 1 });
    // more open .log files than the broker's logs hold segments: a segment's file never closed
    const overSegments = fdVerdict(
      samples((i) => ({ segmentFiles: 20, segmentFds: 10 + (i >> 2), fdKinds: kinds({ log: 10 + (i >> 2) }) })),
    );
    expect(overSegments.flat).to.equal(false);
    expect(overSegments.samplesLogFdsOverSegments).to.equal(28); // from i = 12 (13 .log fds against 10 segments)
    expect(overSegments.other.flat).to.equal(true);
  });

  it('tells fd kinds apart by their readlink target and sums labelled series', () => {
    const d = '/data/t-0/';
    expect(fdKind(`${d}00000000000000000042.log`)).to.equal('log');
    expect(fdKind(`${d}00000000000000000042.index`)).to.equal('index');
    expect(fdKind(`${d}00000000000000000042.timeindex`)).to.equal('timeindex');
    expect(fdKind(`${d}00000000000000000042.txnindex`)).to.equal('txnindex');
    expect(fdKind(`${d}00000000000000000042.log.deleted`)).to.equal('pendingDelete');
    expect(fdKind(`${d}00000000000000000042.log.cleaned`)).to.equal('cleaner');
    expect(fdKind(`${d}00000000000000000042.log (deleted)`)).to.equal('unlinked');
    expect(fdKind(`${d}leader-epoch-checkpoint`)).to.equal('checkpoint');
    expect(fdKind(`${d}00000000000000000042.snapshot`)).to.equal('checkpoint');
    expect(fdKind('/data/meta.properties')).to.equal('otherFile');
    expect(fdKind('socket:[12345]')).to.equal('socket');
    expect(fdKind('pipe:[12345]')).to.equal('pipe');
    expect(fdKind('anon_inode:[eventpoll]')).to.equal('anon');
    expect(fdKind('/dev/null')).to.equal('other');
    const text =
      'kafka_log_log_numlogsegments{topic="a",partition="0"} 3\nkafka_log_log_numlogsegments{topic="a",partition="1"} 4\nkafka_log_log_numlogsegments_x 9\n';
    expect(sumSeries(text, 'kafka_log_log_numlogsegments')).to.equal(7);
    expect(Number.isNaN(sumSeries(text, 'nope'))).to.equal(true);
  });

  it('judges the loop delay by the p99 of the interval p99s', () => {
    expect(loopDelay(samples(() => ({}))).ok).to.equal(true);
    const slow = loopDelay(samples((i) => ({ loopDelayP99Ms: i >= 20 ? 30 : 12 })));
    expect(slow).to.include({ ok: false, intervalsOver20Ms: 20, worstIntervalP99Ms: 30 });
  });

  it('reads unlabelled series from the Prometheus text and plots every panel', () => {
    const m = parseMetrics('# HELP x\nnodejs_heap_size_used_bytes 123\nfoo{a="b"} 3\nnodejs_eventloop_lag_p99_seconds 0.012\n');
    expect(m.get('nodejs_heap_size_used_bytes')).to.equal(123);
    expect(m.get('nodejs_eventloop_lag_p99_seconds')).to.equal(0.012);
    expect(m.has('foo')).to.equal(false);
    const svg = renderSoakPlot(
      samples((i) => ({ fds: 50 + i })),
      'test',
    );
    expect(svg.match(/<polyline /g)?.length).to.equal(17);
    expect(svg).to.include('limit 20');
  });
});
