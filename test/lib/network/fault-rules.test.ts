/**
 * Fault rules without a broker: the one validator (embedded add, JSON for HTTP and GREGOR_FAULTS)
 * naming the field it refuses, JSON names for APIs and errors, all-or-none lists, ids and listing,
 * the declarative filters (client id, topic, partition, per API, topic ids resolved), expiry by
 * ttlMs and expiresAt, jitter, the append gate of 'pause' rules, and partition-scoped error merging.
 */
import { expect } from 'chai';
import { mergeScopedError, namedTopics, withoutPartitions } from '../../../lib/network/fault-scope.js';
import { FaultInjector, FaultRuleError, type FaultRule, parseFaultRules } from '../../../lib/network/faults.js';
import { ApiKey } from '../../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';

const NOT_LEADER = ErrorCode.NOT_LEADER_OR_FOLLOWER;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function refusal(f: () => unknown): FaultRuleError {
  try {
    f();
  } catch (e) {
    expect(e).to.be.instanceOf(FaultRuleError);
    return e as FaultRuleError;
  }
  throw new Error('expected a FaultRuleError');
}

const produceReq = (topics: [string, number[]][], acks = 1) => ({
  transactionalId: null,
  acks,
  timeoutMs: 1000,
  topicData: topics.map(([name, parts]) => ({ name, partitionData: parts.map((index) => ({ index, records: Buffer.from([index]) })) })),
});
const info = (clientId: string | null = 'c') => ({ apiVersion: 8, clientId });

describe('network: fault rules (validation, filters, expiry, pause gate)', () => {
  describe('one validator, naming the field', () => {
    const later = () => Date.now() + 60_000;
    const cases: [string, unknown, string | null][] = [
      ['error without errorCode', { apiKey: 0, action: 'error' }, 'errorCode'],
      ['an unknown error name', { apiKey: 0, action: 'error', errorCode: 'NOT_AN_ERROR' }, 'errorCode'],
      ['errorCode NONE', { apiKey: 0, action: 'error', errorCode: 'NONE' }, 'errorCode'],
      ['errorCode out of int16', { apiKey: 0, action: 'error', errorCode: 40000 }, 'errorCode'],
      ['an unknown API name', { apiKey: 'Nope', action: 'close' }, 'apiKey'],
      ['no apiKey', { action: 'close' }, 'apiKey'],
      ['no action', { apiKey: 0 }, 'action'],
      ['an empty topic', { apiKey: 0, action: 'close', topic: '' }, 'topic'],
      ['a partition without topic', { apiKey: 0, action: 'close', partition: 0 }, 'partition'],
      ['a negative partition', { apiKey: 0, action: 'close', topic: 't', partition: -1 }, 'partition'],
      ['a fractional partition', { apiKey: 0, action: 'close', topic: 't', partition: 1.5 }, 'partition'],
      ['a topic filter on an API that names no topics', { apiKey: 'ApiVersions', action: 'close', topic: 't' }, 'topic'],
      ['a non-string clientId', { apiKey: 0, action: 'close', clientId: 5 }, 'clientId'],
      ['ttlMs 0', { apiKey: 0, action: 'close', ttlMs: 0 }, 'ttlMs'],
      ['a negative ttlMs', { apiKey: 0, action: 'close', ttlMs: -5 }, 'ttlMs'],
      ['ttlMs and expiresAt', { apiKey: 0, action: 'close', ttlMs: 10, expiresAt: later() }, 'ttlMs'],
      ['expiresAt in the past', { apiKey: 0, action: 'close', expiresAt: Date.now() - 1 }, 'expiresAt'],
      ['an unparseable expiresAt', { apiKey: 0, action: 'close', expiresAt: 'tomorrow' }, 'expiresAt'],
      ['jitterMs on an error rule', { apiKey: 0, action: 'error', errorCode: 6, jitterMs: 5 }, 'jitterMs'],
      ['a negative jitterMs', { apiKey: 0, action: 'delay', delayMs: 1, jitterMs: -1 }, 'jitterMs'],
      ['a delay beyond what a timer can wait', { apiKey: 0, action: 'delay', delayMs: 2 ** 31 }, 'delayMs'],
      ['pause without topic', { action: 'pause' }, 'topic'],
      ['pause with times', { action: 'pause', topic: 't', times: 1 }, 'times'],
      ['pause with probability', { action: 'pause', topic: 't', probability: 0.5 }, 'probability'],
      ['pause with when', { action: 'pause', topic: 't', when: 'after' }, 'when'],
      ['pause on Fetch', { apiKey: 'Fetch', action: 'pause', topic: 't' }, 'apiKey'],
      ['match in JSON', { apiKey: 0, action: 'close', match: 'x' }, 'match'],
      ['an unknown field', { apiKey: 0, action: 'close', extra: 1 }, 'extra'],
      ['a string', 'rule', null],
      ['a number', 42, null],
    ];
    for (const [what, rule, field] of cases) {
      it(`refuses ${what}${field === null ? '' : ` (field ${field})`}, over JSON and embedded alike`, () => {
        const f = new FaultInjector();
        const json = refusal(() => f.addJson(rule));
        expect(json.field).to.equal(field);
        expect(json.message).to.match(/^GREGOR_ERR_FAULT_RULE: /);
        if (field !== null) expect(json.message).to.include(field);
        expect(refusal(() => f.add(rule as FaultRule)).field).to.equal(field); // the embedded add names the same field
        expect(f.rules).to.have.length(0);
      });
    }

    it('JSON takes API and error names, ISO times, and pause without apiKey; the rule holds numbers', () => {
      const at = new Date(Date.now() + 60_000);
      const [a, b, c] = parseFaultRules([
        { apiKey: 'Produce', action: 'error', errorCode: 'NOT_LEADER_OR_FOLLOWER' },
        { apiKey: 'listoffsets', action: 'delay', delayMs: 5, jitterMs: 2, expiresAt: at.toISOString() },
        { action: 'pause', topic: 't', partition: 2, ttlMs: 1000 },
      ]);
      expect(a).to.deep.equal({ apiKey: ApiKey.Produce, action: 'error', errorCode: NOT_LEADER });
      expect(b).to.deep.equal({ apiKey: ApiKey.ListOffsets, action: 'delay', delayMs: 5, jitterMs: 2, expiresAt: at.getTime() });
      expect(c).to.deep.equal({ apiKey: ApiKey.Produce, action: 'pause', topic: 't', partition: 2, ttlMs: 1000 });
      // names are for JSON documents; embedded rules may use them too, an ISO string only over JSON
      expect(
        refusal(() => new FaultInjector().add({ apiKey: 0, action: 'close', expiresAt: at.toISOString() as unknown as number })).field,
      ).to.equal('expiresAt');
    });

    it('a list is all or none: the first bad rule is named by index and nothing is added', () => {
      const f = new FaultInjector();
      const e = refusal(() =>
        f.addJson([
          { apiKey: 0, action: 'close' },
          { apiKey: 0, action: 'error', errorCode: 0 },
          { apiKey: 1, action: 'close' },
        ]),
      );
      expect(e).to.include({ index: 1, field: 'errorCode' });
      expect(e.message).to.match(/^GREGOR_ERR_FAULT_RULE: rule 1: /);
      expect(f.list()).to.deep.equal([]);
      const text = refusal(() => f.addJson('[{"apiKey": 0,'));
      expect(text.field).to.equal(null);
      expect(text.message).to.include('not JSON');
      expect(f.addJson('{"apiKey": "Metadata", "action": "close"}').map((h) => h.rule.apiKey)).to.deep.equal([ApiKey.Metadata]);
    });
  });

  describe('ids and listing', () => {
    it('every rule gets an id; get/remove by id; list shows applied, remaining and remaining time', () => {
      const f = new FaultInjector();
      const a = f.add({ apiKey: ApiKey.Produce, action: 'error', errorCode: NOT_LEADER, times: 3, topic: 't', clientId: 'c' });
      const b = f.add({ apiKey: ApiKey.Fetch, action: 'delay', delayMs: 10, jitterMs: 5, ttlMs: 60_000, match: () => true });
      expect(a.id).to.not.equal(b.id);
      expect(f.get(b.id)).to.equal(b);
      expect(f.pick(ApiKey.Produce, produceReq([['t', [0]]]), info())).to.equal(a);
      const [la, lb] = f.list();
      expect(la).to.deep.include({
        id: a.id,
        api: 'Produce',
        action: 'error',
        errorCode: NOT_LEADER,
        error: 'NOT_LEADER_OR_FOLLOWER',
        when: 'before',
        probability: 1,
      });
      expect(la).to.deep.include({ topic: 't', clientId: 'c', times: 3, remaining: 2, applied: 1, expiresAt: null, remainingMs: null });
      expect(lb).to.deep.include({
        id: b.id,
        api: 'Fetch',
        delayMs: 10,
        jitterMs: 5,
        ttlMs: 60_000,
        match: true,
        times: null,
        remaining: null,
        applied: 0,
      });
      expect(lb!.remainingMs).to.be.within(59_000, 60_000);
      expect(Date.parse(lb!.expiresAt!) - Date.parse(lb!.addedAt)).to.equal(60_000);
      const listed = f.list();
      expect(JSON.parse(JSON.stringify(listed))).to.deep.equal(listed); // JSON-safe as it is
      expect(f.remove(a.id)).to.equal(true);
      expect(f.remove(a.id)).to.equal(false);
      expect(a.active).to.equal(false);
      expect(f.get(a.id)).to.equal(undefined);
      expect(f.clear()).to.equal(1);
      expect(b.active).to.equal(false);
    });
  });

  describe('filters', () => {
    it('clientId, topic and partition select requests; rejected ones never draw', () => {
      let draws = 0;
      const f = new FaultInjector({ random: () => (draws++, 0) });
      const h = f.add({ apiKey: ApiKey.Produce, action: 'close', probability: 0.5, topic: 't', partition: 1, clientId: 'victim' });
      expect(f.pick(ApiKey.Produce, produceReq([['t', [1]]]), info('other'))).to.equal(null);
      expect(f.pick(ApiKey.Produce, produceReq([['t', [1]]]), info(null))).to.equal(null);
      expect(f.pick(ApiKey.Produce, produceReq([['t', [0, 2]]]), info('victim'))).to.equal(null);
      expect(f.pick(ApiKey.Produce, produceReq([['u', [1]]]), info('victim'))).to.equal(null);
      expect(draws).to.equal(0);
      expect(
        f.pick(
          ApiKey.Produce,
          produceReq([
            ['u', [0]],
            ['t', [0, 1]],
          ]),
          info('victim'),
        ),
      ).to.equal(h);
      expect(draws).to.equal(1);
    });

    it('knows where each API names topics and partitions (topic ids resolved, Metadata without partitions)', () => {
      const byId = (id: string) => (id === 'aa'.repeat(16) ? 'by-id' : undefined);
      expect(
        namedTopics(ApiKey.Fetch, { topics: [{ topic: '', topicId: 'aa'.repeat(16), partitions: [{ partition: 3 }] }] }, byId),
      ).to.deep.equal([{ topic: 'by-id', partitions: [3] }]);
      expect(
        namedTopics(ApiKey.ListOffsets, { topics: [{ name: 'l', partitions: [{ partitionIndex: 0 }, { partitionIndex: 4 }] }] }),
      ).to.deep.equal([{ topic: 'l', partitions: [0, 4] }]);
      expect(namedTopics(ApiKey.Metadata, { topics: [{ name: 'm' }] })).to.deep.equal([{ topic: 'm', partitions: null }]);
      expect(namedTopics(ApiKey.Metadata, { topics: null })).to.deep.equal([]);
      expect(namedTopics(ApiKey.OffsetFetch, { groups: [{ groupId: 'g', topics: [{ name: 'o', partitionIndexes: [1] }] }] })).to.deep.equal(
        [{ topic: 'o', partitions: [1] }],
      );
      expect(namedTopics(ApiKey.OffsetCommit, { topics: [{ name: 'oc', partitions: [{ partitionIndex: 2 }] }] })).to.deep.equal([
        { topic: 'oc', partitions: [2] },
      ]);
      expect(
        namedTopics(ApiKey.AddPartitionsToTxn, { transactions: [{ topics: [{ name: 'x', partitions: [0] }] }], v3AndBelowTopics: [] }),
      ).to.deep.equal([{ topic: 'x', partitions: [0] }]);
      expect(
        namedTopics(ApiKey.DescribeConfigs, {
          resources: [
            { resourceType: 2, resourceName: 'cfg' },
            { resourceType: 4, resourceName: '1' },
          ],
        }),
      ).to.deep.equal([{ topic: 'cfg', partitions: null }]);
      expect(namedTopics(ApiKey.Heartbeat, { groupId: 'g' })).to.deep.equal([]);

      const f = new FaultInjector();
      const fetchRule = f.add({ apiKey: ApiKey.Fetch, action: 'close', topic: 'by-id', partition: 3 });
      const metaRule = f.add({ apiKey: ApiKey.Metadata, action: 'close', topic: 'm', partition: 0 });
      const services = { metadata: { topicById: (id: string) => (byId(id) === undefined ? undefined : { name: byId(id)! }) } };
      const fetchReq = { topics: [{ topic: '', topicId: 'aa'.repeat(16), partitions: [{ partition: 3 }] }] };
      expect(f.pick(ApiKey.Fetch, fetchReq, { apiVersion: 13, clientId: null, services })).to.equal(fetchRule);
      expect(f.pick(ApiKey.Fetch, fetchReq, { apiVersion: 13, clientId: null })).to.equal(null); // nothing to resolve the id with
      expect(f.pick(ApiKey.Metadata, { topics: [{ name: 'm' }] }, info())).to.equal(null); // Metadata names no partitions
      expect(metaRule.applied).to.equal(0);
    });
  });

  describe('expiry', () => {
    it('ttlMs: the rule applies until it expires, then removes itself (listing and handle agree)', async () => {
      const f = new FaultInjector();
      const h = f.add({ apiKey: ApiKey.Metadata, action: 'close', ttlMs: 150 });
      const keep = f.add({ apiKey: ApiKey.Metadata, action: 'delay', delayMs: 1 });
      expect(f.pick(ApiKey.Metadata, {}, info())).to.equal(h);
      expect(f.list()[0]!.remainingMs).to.be.within(1, 150);
      await sleep(200);
      expect(h.active).to.equal(false); // its timer ran, no request needed
      expect(f.list().map((x) => x.id)).to.deep.equal([keep.id]);
      expect(f.pick(ApiKey.Metadata, {}, info())).to.equal(keep);
      expect(h.applied).to.equal(1);
    });

    it('expiresAt (epoch ms): same, and a pick after the deadline never applies it even before its timer runs', () => {
      const f = new FaultInjector();
      const h = f.add({ apiKey: ApiKey.Metadata, action: 'close', expiresAt: Date.now() + 60 });
      expect(h.expiresAt).to.be.a('number');
      expect(f.pick(ApiKey.Metadata, {}, info())).to.equal(h);
      const until = Date.now() + 80;
      while (Date.now() < until); // block the event loop past the deadline: the timer cannot have run
      expect(h.active).to.equal(true);
      expect(f.pick(ApiKey.Metadata, {}, info())).to.equal(null);
      expect(h.active).to.equal(false);
      expect(h.applied).to.equal(1);
    });
  });

  it('jitter: delayMs plus random() × jitterMs per request', () => {
    const draws = [0, 0.5, 0.999];
    const f = new FaultInjector({ random: () => draws.shift()! });
    f.add({ apiKey: ApiKey.Produce, action: 'delay', delayMs: 100, jitterMs: 40 });
    const p = f.pick(ApiKey.Produce, produceReq([['t', [0]]]), info())!;
    expect([p.nextDelayMs(), p.nextDelayMs(), p.nextDelayMs()]).to.deep.equal([100, 120, 100 + 0.999 * 40]);
  });

  describe('pause gate', () => {
    it('holds matching appends and lets them go in arrival order when the last rule holding them goes', async () => {
      const f = new FaultInjector();
      expect(f.appendGate('t', 0, 'c')).to.equal(null);
      const all = f.add({ apiKey: ApiKey.Produce, action: 'pause', topic: 't' });
      const p0 = f.add({ apiKey: ApiKey.Produce, action: 'pause', topic: 't', partition: 0, clientId: 'a' });
      expect(f.pick(ApiKey.Produce, produceReq([['t', [0]]]), info())).to.equal(null); // pause is not a dispatcher fault
      expect(f.appendGate('u', 0, 'a')).to.equal(null);
      const order: string[] = [];
      const hold = (name: string, partition: number, clientId: string) =>
        f.appendGate('t', partition, clientId)!.then(() => order.push(name));
      const waits = [hold('a0-1', 0, 'a'), hold('b0', 0, 'b'), hold('a1', 1, 'a'), hold('a0-2', 0, 'a')];
      expect(all.applied).to.equal(4); // the first matching pause counts it
      expect(f.list().map((x) => x.held)).to.deep.equal([4, 2]);
      all.remove(); // b0 and a1 are free; a0-* still held by p0
      await sleep(0);
      expect(order).to.deep.equal(['b0', 'a1']);
      expect(f.appendGate('t', 0, 'b')).to.equal(null);
      const a03 = hold('a0-3', 0, 'a');
      expect(p0.applied).to.equal(1);
      p0.remove();
      await Promise.all([...waits, a03]);
      expect(order).to.deep.equal(['b0', 'a1', 'a0-1', 'a0-2', 'a0-3']);
    });

    it('a pause with ttlMs releases on its own; clear() releases everything', async () => {
      const f = new FaultInjector();
      f.add({ apiKey: ApiKey.Produce, action: 'pause', topic: 't', ttlMs: 100 });
      const t0 = performance.now();
      await f.appendGate('t', 0, null);
      expect(performance.now() - t0).to.be.at.least(95);
      expect(f.list()).to.deep.equal([]);
      f.add({ apiKey: ApiKey.Produce, action: 'pause', topic: 't' });
      const held = f.appendGate('t', 1, null)!;
      expect(f.clear()).to.equal(1);
      await held;
    });
  });

  describe('partition-scoped errors', () => {
    const hit = (t: string, p: number) => t === 't' && p === 1;
    it('Produce: the request without the named partitions, or null when none are left', () => {
      const req = produceReq([
        ['t', [0, 1]],
        ['u', [1]],
      ]);
      expect(withoutPartitions(ApiKey.Produce, req, hit)).to.deep.equal({
        ...req,
        topicData: [{ name: 't', partitionData: [req.topicData[0]!.partitionData[0]] }, req.topicData[1]],
      });
      expect(withoutPartitions(ApiKey.Produce, produceReq([['t', [1]]]), hit)).to.equal(null);
    });

    it('the answer: named partitions from the error response, the others from the real one, in request order', () => {
      const req = produceReq([
        ['t', [0, 1, 2]],
        ['u', [1]],
      ]);
      const part = (index: number, errorCode: number, baseOffset: bigint) => ({ index, errorCode, baseOffset });
      const errorBody = {
        responses: [
          { name: 't', partitionResponses: [part(0, NOT_LEADER, -1n), part(1, NOT_LEADER, -1n), part(2, NOT_LEADER, -1n)] },
          { name: 'u', partitionResponses: [part(1, NOT_LEADER, -1n)] },
        ],
        throttleTimeMs: 0,
      };
      const real = {
        responses: [
          { name: 'u', partitionResponses: [part(1, 0, 7n)] },
          { name: 't', partitionResponses: [part(2, 0, 5n), part(0, 0, 4n)] },
        ],
        throttleTimeMs: 3,
      };
      expect(mergeScopedError(ApiKey.Produce, req, errorBody, real, hit)).to.deep.equal({
        responses: [
          { name: 't', partitionResponses: [part(0, 0, 4n), part(1, NOT_LEADER, -1n), part(2, 0, 5n)] },
          { name: 'u', partitionResponses: [part(1, 0, 7n)] },
        ],
        throttleTimeMs: 3,
      });
      // a Fetch that failed as a whole stays as it is
      const failed = { errorCode: ErrorCode.FETCH_SESSION_ID_NOT_FOUND, responses: [] };
      expect(
        mergeScopedError(
          ApiKey.Fetch,
          { topics: [{ topic: 't', partitions: [{ partition: 1 }] }] },
          { errorCode: NOT_LEADER, responses: [] },
          failed,
          hit,
        ),
      ).to.equal(failed);
    });
  });
});
