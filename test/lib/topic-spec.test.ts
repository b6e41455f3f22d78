import { expect } from 'chai';
import { mergeTopicSpecs, parseTopicSpec, parseTopicSpecList, TopicSpecError } from '../../lib/topic-spec.js';

describe('declared topic specs (--topic, GREGOR_TOPICS)', () => {
  it('parses name:partitions:key=value,... and keeps commas inside list values', () => {
    expect(parseTopicSpec('orders:3')).to.deep.equal({ name: 'orders', partitions: 3, configs: {} });
    expect(parseTopicSpec('orders')).to.deep.equal({ name: 'orders', partitions: -1, configs: {} });
    expect(parseTopicSpec('o.r_d-ers::retention.ms=1000')).to.deep.equal({
      name: 'o.r_d-ers',
      partitions: -1,
      configs: { 'retention.ms': '1000' },
    });
    expect(parseTopicSpec('c:2:cleanup.policy=compact,delete,retention.ms=60000,min.cleanable.dirty.ratio=0.1')).to.deep.equal({
      name: 'c',
      partitions: 2,
      configs: { 'cleanup.policy': 'compact,delete', 'retention.ms': '60000', 'min.cleanable.dirty.ratio': '0.1' },
    });
  });

  it('rejects bad names, partitions, config names and values with GREGOR_ERR_TOPIC_SPEC and the reason', () => {
    const cases: [string, RegExp][] = [
      ['', /Topic name is empty/],
      ['bad name:1', /contains characters other than/],
      ['__consumer_offsets:1', /internal topic/],
      ['orders:0', /partitions must be a positive integer, got '0'/],
      ['orders:x', /partitions must be a positive integer, got 'x'/],
      ['orders:-1', /partitions must be a positive integer/],
      ['orders:1:1', /expected key=value, got '1'; the replication factor is always 1/],
      ['orders:1:retention', /expected key=value, got 'retention'/],
      ['orders:1:no.such.config=1', /unknown topic config 'no.such.config'/],
      ['orders:1:retention.ms=soon', /retention.ms=soon: expected an integer/],
      ['orders:1:retention.ms=1,retention.ms=2', /given twice/],
      ['orders:1:cleanup.policy=compact,delete,compression.type=brotli', /compression.type=brotli: must be one of/],
    ];
    for (const [spec, re] of cases) {
      expect(() => parseTopicSpec(spec), spec).to.throw(TopicSpecError, re);
      expect(() => parseTopicSpec(spec), spec).to.throw(/^GREGOR_ERR_TOPIC_SPEC: --topic '/);
    }
  });

  it('splits GREGOR_TOPICS on whitespace and semicolons, never on commas', () => {
    const specs = parseTopicSpecList(' a:1 b:2:cleanup.policy=compact,delete;c\n d:4;; ');
    expect(specs.map((s) => s.name)).to.deep.equal(['a', 'b', 'c', 'd']);
    expect(specs[1]?.configs).to.deep.equal({ 'cleanup.policy': 'compact,delete' });
    expect(parseTopicSpecList('')).to.deep.equal([]);
    // the KAFKA_CREATE_TOPICS habit gets a pointer to the separator
    expect(() => parseTopicSpecList('a:1:1,b:3:1')).to.throw(
      /^GREGOR_ERR_TOPIC_SPEC: GREGOR_TOPICS 'a:1:1,b:3:1': separate topics with spaces or ';'/,
    );
  });

  it('merges declarations: the same topic twice must be declared alike', () => {
    expect(mergeTopicSpecs([parseTopicSpec('a:1')], [parseTopicSpec('a:1'), parseTopicSpec('b')])).to.have.length(2);
    expect(() => mergeTopicSpecs([parseTopicSpec('a:1')], [parseTopicSpec('a:2')])).to.throw(/topic 'a' is declared twice, differently/);
  });
});
