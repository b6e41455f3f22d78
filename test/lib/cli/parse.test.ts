import { expect } from 'chai';
import { UsageError } from '../../../lib/cli/errors.js';
import {
  parseAcks,
  parseCompression,
  parseDuration,
  parseKeyValue,
  parseOffsetSpec,
  parsePartitionList,
  parseTimestamp,
  parseTopicPartitions,
} from '../../../lib/cli/parse.js';
import { parseTime } from '../../../lib/cli/commands/offsets.js';

describe('cli: value parsers', () => {
  it('offset specs as kcat and rpk write them', () => {
    expect(parseOffsetSpec('start')).to.deep.equal({ kind: 'start' });
    expect(parseOffsetSpec('beginning')).to.deep.equal({ kind: 'start' });
    expect(parseOffsetSpec('end')).to.deep.equal({ kind: 'end' });
    expect(parseOffsetSpec('42')).to.deep.equal({ kind: 'offset', offset: 42n });
    expect(parseOffsetSpec('-5')).to.deep.equal({ kind: 'relative', count: 5n });
    expect(parseOffsetSpec('@1700000000000')).to.deep.equal({ kind: 'timestamp', timestamp: 1700000000000n });
    expect(parseOffsetSpec('s@1700000000000')).to.deep.equal({ kind: 'timestamp', timestamp: 1700000000000n });
    expect(parseOffsetSpec('@2024-05-01T12:00:00Z')).to.deep.equal({
      kind: 'timestamp',
      timestamp: BigInt(Date.parse('2024-05-01T12:00:00Z')),
    });
    for (const bad of ['', 'later', '1.5', '@yesterday', '+3']) expect(() => parseOffsetSpec(bad), bad).to.throw(UsageError);
  });

  it('timestamps: milliseconds, ISO date-times, dates (midnight UTC)', () => {
    expect(parseTimestamp('0')).to.equal(0n);
    expect(parseTimestamp('2024-01-02')).to.equal(BigInt(Date.UTC(2024, 0, 2)));
    expect(parseTimestamp('2024-01-02T03:04:05.678+01:00')).to.equal(BigInt(Date.parse('2024-01-02T03:04:05.678+01:00')));
    expect(() => parseTimestamp('2024-13-45')).to.throw(UsageError);
    expect(() => parseTimestamp('soon')).to.throw(UsageError);
  });

  it('durations', () => {
    expect(parseDuration('1500')).to.equal(1500);
    expect(parseDuration('500ms')).to.equal(500);
    expect(parseDuration('30s')).to.equal(30000);
    expect(parseDuration('2m')).to.equal(120000);
    expect(parseDuration('1.5s')).to.equal(1500);
    expect(() => parseDuration('10 minutes')).to.throw(UsageError);
  });

  it('partition lists, topic:partitions, key=value, acks, compression, offsets --time', () => {
    expect(parsePartitionList('3,0,1-2,2')).to.deep.equal([0, 1, 2, 3]);
    expect(() => parsePartitionList('2-1')).to.throw(UsageError);
    expect(() => parsePartitionList('a')).to.throw(UsageError);
    expect(parseTopicPartitions('orders')).to.deep.equal({ topic: 'orders', partitions: null });
    expect(parseTopicPartitions('orders:0,2')).to.deep.equal({ topic: 'orders', partitions: [0, 2] });
    expect(parseKeyValue('a=b=c')).to.deep.equal(['a', 'b=c']);
    expect(parseKeyValue('a=')).to.deep.equal(['a', '']);
    expect(() => parseKeyValue('=x')).to.throw(UsageError);
    expect([parseAcks('all'), parseAcks('-1'), parseAcks('0'), parseAcks('1')]).to.deep.equal([-1, -1, 0, 1]);
    expect(() => parseAcks('2')).to.throw(UsageError);
    expect(['none', 'gzip', 'snappy', 'lz4', 'zstd'].map(parseCompression)).to.deep.equal([0, 1, 2, 3, 4]);
    expect(() => parseCompression('brotli')).to.throw(UsageError);
    expect([parseTime('earliest'), parseTime('latest'), parseTime('max-timestamp'), parseTime('1700000000000')]).to.deep.equal([
      -2n,
      -1n,
      -3n,
      1700000000000n,
    ]);
  });
});
