/** Group configs (ConfigResource GROUP): share.auto.offset.reset parsing, Kafka's validation rules, where a share partition starts. */
import { expect } from 'chai';
import { BrokerConfig } from '../../../lib/config.js';
import { groupConfigEntries, parseIsoDuration, parseShareAutoOffsetReset, validateGroupConfigs } from '../../../lib/group/group-configs.js';
import { ResourceError } from '../../../lib/handlers/config-resources.js';
import { LocalMetadataStore } from '../../../lib/metadata/local-store.js';
import type { PartitionLog } from '../../../lib/log/partition-log.js';
import { initialOffset } from '../../../lib/share/share-partitions.js';
import { makeTempDir } from '../../helpers/temp-dirs.js';

describe('group configs', () => {
  it('parses share.auto.offset.reset: latest, earliest, by_duration:<ISO-8601>', () => {
    expect(parseShareAutoOffsetReset('latest')).to.deep.equal({ kind: 'latest' });
    expect(parseShareAutoOffsetReset('EARLIEST')).to.deep.equal({ kind: 'earliest' });
    expect(parseShareAutoOffsetReset('by_duration:PT1H30M')).to.deep.equal({ kind: 'by_duration', durationMs: 5_400_000 });
    expect(parseShareAutoOffsetReset('by_duration:P1DT0.5S')).to.deep.equal({ kind: 'by_duration', durationMs: 86_400_500 });
    for (const bad of ['none', 'by_duration:', 'by_duration:P', 'by_duration:PT', 'by_duration:1H', 'by_duration:-PT1H'])
      expect(parseShareAutoOffsetReset(bad), bad).to.equal(undefined);
    expect(parseIsoDuration('PT0S')).to.equal(0);
  });

  it("validates like Kafka's GroupConfig: names, types, the broker's min/max bounds, session > heartbeat", () => {
    const c = new BrokerConfig();
    const msg = (next: Record<string, string | null>): string => {
      try {
        validateGroupConfigs(c, next);
        return '';
      } catch (e) {
        expect(e).to.be.instanceOf(ResourceError);
        return (e as Error).message;
      }
    };
    expect(msg({ 'share.record.lock.duration.ms': '30000', 'share.auto.offset.reset': 'earliest' })).to.equal('');
    expect(msg({ 'share.record.lock.duration.ms': '10000' })).to.contain(
      'greater than or equal to group.share.min.record.lock.duration.ms',
    );
    expect(msg({ 'share.record.lock.duration.ms': '999' })).to.contain('at least 1000');
    expect(msg({ 'share.heartbeat.interval.ms': 'soon' })).to.contain('Not a number');
    expect(msg({ 'consumer.session.timeout.ms': '70000' })).to.contain('less than or equal to group.consumer.max.session.timeout.ms');
    expect(msg({ 'bogus.key': '1' })).to.contain('Unknown group config name: bogus.key');
    // a null value (deleted) is dropped
    expect(validateGroupConfigs(c, { 'share.auto.offset.reset': null })).to.deep.equal({});
    // the broker's own value below its min bound does not make every group config change fail
    const fastHeartbeat = new BrokerConfig({ overrides: { 'group.consumer.heartbeat.interval.ms': '500' } });
    expect(validateGroupConfigs(fastHeartbeat, { 'share.auto.offset.reset': 'earliest' })).to.deep.equal({
      'share.auto.offset.reset': 'earliest',
    });
    const bounded = new BrokerConfig({ overrides: { 'group.share.max.heartbeat.interval.ms': '60000' } });
    expect(() => validateGroupConfigs(bounded, { 'share.heartbeat.interval.ms': '50000' })).to.throw(
      /greater than share.heartbeat.interval.ms/,
    );
  });

  it('describes every key: the override (source 8) or the broker value (source 5)', () => {
    const c = new BrokerConfig({ overrides: { 'group.share.record.lock.duration.ms': '20000' } });
    const entries = groupConfigEntries(c, { 'share.auto.offset.reset': 'earliest' }, null);
    const by = new Map(entries.map((e) => [e.name, e]));
    expect([...by.keys()]).to.include.members(['share.auto.offset.reset', 'share.record.lock.duration.ms', 'consumer.session.timeout.ms']);
    expect(by.get('share.auto.offset.reset')).to.include({ value: 'earliest', source: 8 });
    expect(by.get('share.record.lock.duration.ms')).to.include({ value: '20000', source: 5 });
  });

  it('a share partition starts at the log start, the high watermark, or the first record within the duration', () => {
    const log = {
      logStartOffset: 5n,
      highWatermark: 50n,
      offsetForTimestamp: (ts: bigint) => (ts <= 1_000_000n ? { offset: 40n, timestamp: ts, leaderEpoch: 0 } : null),
    } as unknown as PartitionLog;
    expect(initialOffset(log, { kind: 'earliest' }, 2_000_000)).to.equal(5n);
    expect(initialOffset(log, { kind: 'latest' }, 2_000_000)).to.equal(50n);
    expect(initialOffset(log, { kind: 'by_duration', durationMs: 1_000_000 }, 2_000_000)).to.equal(40n);
    expect(initialOffset(log, { kind: 'by_duration', durationMs: 10 }, 2_000_000)).to.equal(50n);
  });

  it('the local metadata store keeps group configs across a reopen', async () => {
    const dir = makeTempDir('gregor-group-configs-');
    const s = await LocalMetadataStore.open(dir, { nodeId: 1 });
    await s.setGroupConfigs('g', { 'share.auto.offset.reset': 'earliest' });
    await s.setGroupConfigs('h', { 'share.auto.offset.reset': 'earliest' });
    await s.setGroupConfigs('h', {});
    await s.close();
    const again = await LocalMetadataStore.open(dir, { nodeId: 1 });
    expect(again.groupConfigs('g')).to.deep.equal({ 'share.auto.offset.reset': 'earliest' });
    expect(again.groupConfigs('h')).to.deep.equal({});
    await again.close();
  });
});
