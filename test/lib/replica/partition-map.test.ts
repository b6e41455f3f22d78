/** PartitionMap (lib/replica/replication.ts): a Map by `topic\0partition` whose `at` lookup by topic and index stays in step with it. */
import { expect } from 'chai';
import { PartitionMap } from '../../../lib/replica/replication.js';

interface V {
  topic: string;
  partition: number;
  n: number;
}
const k = (v: { topic: string; partition: number }): string => `${v.topic}\u0000${v.partition}`;
const v = (topic: string, partition: number, n = 0): V => ({ topic, partition, n });

describe('PartitionMap', () => {
  it('at() finds what set() put, under the same topic and partition as get() by key', () => {
    const m = new PartitionMap<V>();
    const a = v('t', 0);
    const b = v('t', 2999);
    const c = v('u', 1);
    for (const x of [a, b, c]) m.set(k(x), x);
    expect(m.at('t', 0)).to.equal(a);
    expect(m.at('t', 2999)).to.equal(b);
    expect(m.at('u', 1)).to.equal(c);
    expect(m.at('t', 1)).to.equal(undefined);
    expect(m.at('v', 0)).to.equal(undefined);
    expect(m.get(k(b))).to.equal(b);
    expect(m.size).to.equal(3);
    expect([...m.values()]).to.deep.equal([a, b, c]);
  });

  it('a replaced value is found in its place; a deleted one is gone from both', () => {
    const m = new PartitionMap<V>();
    const a = v('t', 3, 1);
    const a2 = v('t', 3, 2);
    m.set(k(a), a);
    m.set(k(a2), a2);
    expect(m.at('t', 3)).to.equal(a2);
    expect(m.delete(k(a2))).to.equal(true);
    expect(m.at('t', 3)).to.equal(undefined);
    expect(m.get(k(a2))).to.equal(undefined);
    expect(m.delete(k(a2))).to.equal(false);
  });

  it('deleting while iterating (a topic dropped) and clear() keep the index in step', () => {
    const m = new PartitionMap<V>();
    for (let p = 0; p < 5; p++) m.set(k(v('gone', p)), v('gone', p));
    m.set(k(v('kept', 0)), v('kept', 0));
    for (const [key, x] of m) if (x.topic === 'gone') m.delete(key);
    m.forgetTopic('gone');
    m.forgetTopic('kept'); // still has a partition: stays
    expect(m.at('gone', 2)).to.equal(undefined);
    expect(m.at('kept', 0)?.topic).to.equal('kept');
    m.set(k(v('gone', 1)), v('gone', 1, 7));
    expect(m.at('gone', 1)?.n).to.equal(7);
    m.clear();
    expect(m.size).to.equal(0);
    expect(m.at('kept', 0)).to.equal(undefined);
    expect(m.at('gone', 1)).to.equal(undefined);
  });
});
