/** The per-second throughput ring behind the console's charts, and the record count of fetched sections. */
import { expect } from 'chai';
import { KeyedHistory } from '../../../lib/observability/keyed-history.js';
import { ThroughputHistory } from '../../../lib/observability/throughput-history.js';
import { countRecords, TopicStats } from '../../../lib/observability/topic-metrics.js';
import { buildMessageSet, buildRecordBatch } from '../../../protocol/records/index.js';

describe('ThroughputHistory', () => {
  it('keeps what happened in each second, oldest first', () => {
    const totals = new TopicStats();
    const h = new ThroughputHistory(totals, 5);
    h.sample(100); // first sample: the baseline second, nothing counted yet
    totals.messagesIn += 3;
    totals.bytesIn += 300;
    h.sample(101);
    totals.messagesOut += 2;
    totals.bytesOut += 50;
    h.sample(102);
    const s = h.snapshot();
    expect(s.start).to.equal(100);
    expect(s.series.messagesIn).to.deep.equal([0, 3, 0]);
    expect(s.series.bytesIn).to.deep.equal([0, 300, 0]);
    expect(s.series.messagesOut).to.deep.equal([0, 0, 2]);
    expect(s.series.bytesOut).to.deep.equal([0, 0, 50]);
    expect(h.snapshot(2).start).to.equal(101);
    expect(h.snapshot(2).series.messagesIn).to.deep.equal([3, 0]);
  });

  it('fills missed seconds with zeros, puts the difference on the newest, and keeps only its capacity', () => {
    const totals = new TopicStats();
    const h = new ThroughputHistory(totals, 4);
    h.sample(10);
    totals.messagesIn = 7;
    h.sample(13); // 11 and 12 were missed
    expect(h.snapshot().series.messagesIn).to.deep.equal([0, 0, 0, 7]);
    totals.messagesIn = 8;
    h.sample(14);
    expect(h.snapshot().start).to.equal(11);
    expect(h.snapshot().series.messagesIn).to.deep.equal([0, 0, 7, 1]);
    h.sample(14); // the same second again: nothing moves
    totals.messagesIn = 20;
    h.sample(100); // a gap longer than the ring
    expect(h.snapshot().series.messagesIn).to.deep.equal([0, 0, 0, 12]);
    expect(h.snapshot().start).to.equal(97);
  });
});

describe('KeyedHistory', () => {
  it('counters: per-second differences per key (totals from zero); idle keys give their ring up, gone keys are forgotten', () => {
    const h = new KeyedHistory(['in', 'out'], { kind: 'counter', capacity: 3, maxKeys: 10 });
    h.sample(10, [['idle', [0, 0]]]);
    h.sample(11, [
      ['a', [3, 1]], // a's first count
      ['idle', [0, 0]],
    ]);
    h.sample(12, [
      ['a', [3, 4]],
      ['idle', [0, 0]],
    ]);
    expect(h.snapshot('a').series).to.deep.equal({ in: [3, 0], out: [1, 3] });
    expect(h.snapshot('a').start).to.equal(11);
    expect(h.snapshot('idle').series).to.deep.equal({ in: [], out: [] });
    expect(h.ringCount).to.equal(1);
    h.sample(14, [['a', [4, 4]]]); // 13 missed: zero; 'idle' no longer reported
    expect(h.snapshot('a').series.in).to.deep.equal([0, 0, 1]);
    h.sample(15, [['a', [4, 4]]]);
    h.sample(16, [['a', [4, 4]]]);
    h.sample(17, [['a', [4, 4]]]); // nothing moved for a whole ring
    expect(h.ringCount).to.equal(0);
    expect(h.snapshot('a').series.in).to.deep.equal([]);
  });

  it('gauges: kept as reported, a missed second holds the value, at most maxKeys rings (the idlest goes)', () => {
    const h = new KeyedHistory(['lag'], { kind: 'gauge', capacity: 4, maxKeys: 2 });
    h.sample(1, [['g1', [7]]]);
    h.sample(3, [
      ['g1', [5]],
      ['g2', [1]],
    ]);
    expect(h.snapshot('g1').series['lag']).to.deep.equal([7, 5, 5]);
    expect(h.snapshot('g2').series['lag']).to.deep.equal([1]);
    h.sample(4, [
      ['g2', [0]],
      ['g3', [2]],
      ['g1', [4]],
    ]);
    expect(h.ringCount).to.equal(2);
    expect(h.snapshot('g3').series['lag']).to.deep.equal([2]);
  });
});

describe('countRecords', () => {
  it('counts v2 batch records and magic 0/1 entries, not a partial tail', () => {
    const rec = (v: string) => ({ key: null, value: Buffer.from(v), timestamp: 1n });
    const b1 = buildRecordBatch([rec('a'), rec('b'), rec('c')]);
    const b2 = buildRecordBatch([rec('d')]);
    expect(countRecords(Buffer.concat([b1, b2]))).to.equal(4);
    expect(countRecords(Buffer.concat([b1, b2.subarray(0, 30)]))).to.equal(3);
    const legacy = buildMessageSet([rec('x'), rec('y')], { magic: 1 });
    expect(countRecords(legacy)).to.equal(2);
    expect(countRecords(Buffer.alloc(0))).to.equal(0);
  });
});
