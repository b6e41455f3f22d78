/**
 * compat/bench/mock-vs-gregor-report.ts: the per-round ratio (gregor / mock within each round, median
 * and range) beside the ratio of the medians, from made-up rounds.
 */
import { expect } from 'chai';
import { markdownTable, summarize, type Round, type TargetRound, type Throughput } from '../../compat/bench/mock-vs-gregor-report.js';

const tp = (recordsPerSec: number): Throughput => ({
  records: 1e6,
  seconds: 1e6 / recordsPerSec,
  recordsPerSec,
  brokerCpuSPerM: 0.2,
  servingCpuSPerM: 0.1,
  clientCpuSPerM: 0.4,
});

const target = (acks1: number, consume?: number): TargetRound => ({
  produceAcks1: tp(acks1),
  ...(consume === undefined ? {} : { consume: tp(consume) }),
  e2e: [],
  rssIdleMB: null,
  rssAfterProduceConsumeMB: null,
  rssEndMB: null,
  peakRssMB: null,
});

describe('mock-vs-gregor report: per-round ratios', () => {
  // acks=1 ratios per round: 0.5, 1.0, 2.0 (median 1.0); the medians' ratio: 2M / 2M = 1.0 too,
  // but consume is only in two rounds where the mock has it: ratios 0.75 and 1.25
  const rounds: Round[] = [
    { round: 1, order: ['gregor', 'mock'], startedAt: '', results: { gregor: target(1e6, 3e6), mock: target(2e6, 4e6) } },
    { round: 2, order: ['mock', 'gregor'], startedAt: '', results: { gregor: target(2e6, 5e6), mock: target(2e6, 4e6) } },
    { round: 3, order: ['gregor', 'mock'], startedAt: '', results: { gregor: target(4e6), mock: target(2e6, 1e6) } },
  ];
  const rows = summarize(['mock', 'gregor'], rounds, [], 1e6);

  it('gives the median and range of the ratios within rounds, over the rounds both brokers have', () => {
    const acks1 = rows.find((r) => r.id === 'produce-acks1');
    expect(acks1?.perRoundRatio).to.deep.equal({ median: 1, min: 0.5, max: 2, rounds: 3 });
    const consume = rows.find((r) => r.id === 'consume');
    expect(consume?.perRoundRatio).to.deep.equal({ median: 1, min: 0.75, max: 1.25, rounds: 2 });
    // a workload no round has gets none
    expect(rows.find((r) => r.id === 'produce-acksall')?.perRoundRatio).to.equal(undefined);
  });

  it('prints it in its own column', () => {
    const table = markdownTable(['mock', 'gregor'], rows, { mock: 'rdk:mock thread', gregor: 'main thread' });
    expect(table.split('\n')[0]).to.include('ratio per round: median (min–max)');
    const line = table.split('\n').find((l) => l.startsWith('| produce acks=1'));
    expect(line).to.include('| 1.00 (0.50–2.00) |');
  });

  it('gives each broker its client CPU and the cores broker and client kept busy together (throughput rows only)', () => {
    // acks=1, gregor: 1M, 2M, 4M records/s at 0.2 + 0.4 CPU-s/M → 0.6, 1.2, 2.4 cores (median 1.2)
    const acks1 = rows.find((r) => r.id === 'produce-acks1');
    expect(acks1?.clientCpu).to.deep.equal({ mock: 0.4, gregor: 0.4 });
    expect(acks1?.coresBusy).to.deep.equal({ mock: 1.2, gregor: 1.2 });
    const consume = rows.find((r) => r.id === 'consume');
    // gregor consume: 3M, 5M → 1.8, 3.0 cores (median 2.4); mock: 4M, 4M, 1M → 2.4, 2.4, 0.6 (median 2.4)
    expect(consume?.coresBusy).to.deep.equal({ mock: 2.4, gregor: 2.4 });
    const table = markdownTable(['mock', 'gregor'], rows, { mock: 'rdk:mock thread', gregor: 'main thread' });
    const head = table.split('\n')[0] ?? '';
    expect(head).to.include(
      '| mock client CPU | gregor client CPU | mock cores busy (broker + client) | gregor cores busy (broker + client) |',
    );
    expect(table.split('\n').find((l) => l.startsWith('| produce acks=1'))).to.match(/\| 0\.40 s\/M \| 0\.40 s\/M \| 1\.20 \| 1\.20 \|$/);
  });

  it('leaves the client columns empty for a broker without CPU figures and for rows that are not throughput', () => {
    const noPid: Round[] = [
      {
        round: 1,
        order: ['broker'],
        startedAt: '',
        results: { broker: { ...target(1e6), produceAcks1: { ...tp(1e6), brokerCpuSPerM: null } } },
      },
    ];
    const r = summarize(['broker'], noPid, [{ order: ['broker'], ms: { broker: 100 } }], 1e6);
    expect(r.find((x) => x.id === 'produce-acks1')?.coresBusy).to.deep.equal({ broker: null });
    const table = markdownTable(['broker'], r, {});
    expect(table.split('\n').find((l) => l.startsWith('| produce acks=1'))).to.match(/\| 0\.40 s\/M \| – \|$/);
    expect(table.split('\n').find((l) => l.startsWith('| process start'))).to.match(/\| 100 (\| {2}){4}\|$/);
  });
});
