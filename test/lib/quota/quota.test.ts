/** Client quota entities (Kafka's precedence and validation), the sampled rate and the quota manager, on a fake clock. */
import { expect } from 'chai';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import {
  type ClientQuotas,
  entityKey,
  matchesFilter,
  parseEntityKey,
  parseQuotaFilter,
  QuotaValidationError,
  validateEntity,
  validateQuotaValue,
} from '../../../lib/quota/entity.js';
import { ClientQuotaManager, quotaUser } from '../../../lib/quota/manager.js';
import { SampledRate } from '../../../lib/quota/rate.js';

function quotas(entries: [Record<string, string | null>, Record<string, number>][]): Map<string, Record<string, number>> {
  return new Map(entries.map(([e, v]) => [entityKey(e), v]));
}

describe('client quotas', () => {
  describe('entities', () => {
    it('round-trips entity keys independent of type order', () => {
      const k = entityKey({ 'client-id': null, user: 'a' });
      expect(k).to.equal(entityKey({ user: 'a', 'client-id': null }));
      expect(parseEntityKey(k)).to.deep.equal({ user: 'a', 'client-id': null });
      expect(parseEntityKey('nonsense')).to.equal(undefined);
    });

    it('refuses what Kafka refuses, with its codes', () => {
      const code = (f: () => unknown): number | undefined => {
        try {
          f();
        } catch (e) {
          if (e instanceof QuotaValidationError) return e.errorCode;
          throw e;
        }
        return undefined;
      };
      expect(code(() => validateEntity([]))).to.equal(ErrorCode.INVALID_REQUEST);
      expect(code(() => validateEntity([{ entityType: 'topic', entityName: 't' }]))).to.equal(ErrorCode.UNSUPPORTED_VERSION);
      expect(code(() => validateEntity([{ entityType: 'ip', entityName: '::1' }]))).to.equal(undefined);
      expect(code(() => validateQuotaValue({ user: 'u' }, 'connection_creation_rate', 1))).to.equal(ErrorCode.INVALID_REQUEST);
      expect(code(() => validateQuotaValue({ ip: null }, 'producer_byte_rate', 1))).to.equal(ErrorCode.INVALID_REQUEST);
      expect(code(() => validateQuotaValue({ user: 'u' }, 'request_percentage', 12.5))).to.equal(undefined);
      expect(code(() => parseQuotaFilter([{ entityType: 'user', matchType: 7, match: null }], false))).to.equal(
        ErrorCode.UNSUPPORTED_VERSION,
      );
    });

    it('filters as DescribeClientQuotas does (exact, default, any; strict)', () => {
      const f = parseQuotaFilter([{ entityType: 'user', matchType: 1, match: null }], false);
      expect(matchesFilter({ user: null }, f)).to.equal(true);
      expect(matchesFilter({ user: null, 'client-id': 'c' }, f)).to.equal(true);
      expect(matchesFilter({ user: 'u' }, f)).to.equal(false);
      const strict = parseQuotaFilter([{ entityType: 'client-id', matchType: 2, match: null }], true);
      expect(matchesFilter({ 'client-id': null }, strict)).to.equal(true);
      expect(matchesFilter({ user: 'u', 'client-id': 'c' }, strict)).to.equal(false);
    });
  });

  describe('SampledRate', () => {
    it('measures over at least samples-1 windows, forgets expired samples, and throttles back to the bound', () => {
      const r = new SampledRate(11, 1000, 0);
      r.record(10_000, 0);
      expect(r.rate(0)).to.equal(1000); // 10,000 over the 10 s minimum
      expect(r.throttleMs(1000, 0)).to.equal(0);
      r.record(10_000, 500);
      expect(r.windowSize(500)).to.equal(10_500); // the 0.5 s elapsed + 10 windows
      expect(r.rate(500)).to.be.closeTo(20_000 / 10.5, 1e-9);
      expect(r.throttleMs(1000, 500)).to.equal(9500); // (rate - 1000) / 1000 × 10.5 s
      expect(r.rate(11_000)).to.equal(0); // both expired (11 samples × 1 s)
    });
  });

  describe('ClientQuotaManager', () => {
    let now = 0;
    let configs: ClientQuotas = new Map();
    const m = new ClientQuotaManager(
      () => configs,
      () => ({ samples: 11, windowMs: 1000 }),
      () => now,
    );

    it("takes Kafka's order: user+client, user+default client, user, default user+client, ..., default client", () => {
      configs = quotas([
        [{ 'client-id': null }, { producer_byte_rate: 8 }],
        [{ 'client-id': 'c' }, { producer_byte_rate: 7 }],
        [{ user: null }, { producer_byte_rate: 6 }],
        [{ user: null, 'client-id': null }, { producer_byte_rate: 5 }],
        [{ user: null, 'client-id': 'c' }, { producer_byte_rate: 4 }],
        [{ user: 'u' }, { producer_byte_rate: 3 }],
        [{ user: 'u', 'client-id': null }, { producer_byte_rate: 2 }],
        [{ user: 'u', 'client-id': 'c' }, { producer_byte_rate: 1 }],
      ]);
      expect(m.quotaFor('producer_byte_rate', 'u', 'c')?.bound).to.equal(1);
      expect(m.quotaFor('producer_byte_rate', 'u', 'd')).to.deep.equal({ bound: 2, tags: JSON.stringify(['u', 'd']) });
      expect(m.quotaFor('producer_byte_rate', 'v', 'c')).to.deep.equal({ bound: 4, tags: JSON.stringify(['v', 'c']) });
      expect(m.quotaFor('producer_byte_rate', 'v', 'd')?.bound).to.equal(5);
      configs = quotas([
        [{ user: 'u' }, { producer_byte_rate: 3 }],
        [{ 'client-id': 'c' }, { producer_byte_rate: 7 }],
        [{ 'client-id': null }, { producer_byte_rate: 8 }],
      ]);
      expect(m.quotaFor('producer_byte_rate', 'u', 'c')).to.deep.equal({ bound: 3, tags: JSON.stringify(['u', '']) });
      expect(m.quotaFor('producer_byte_rate', 'v', 'c')).to.deep.equal({ bound: 7, tags: JSON.stringify(['', 'c']) });
      expect(m.quotaFor('producer_byte_rate', 'v', 'x')?.bound).to.equal(8);
      expect(m.quotaFor('consumer_byte_rate', 'v', 'x')).to.equal(undefined);
    });

    it('throttles each client on its own rate; a quota shared by an entity is shared by its clients', () => {
      configs = quotas([[{ user: null }, { producer_byte_rate: 1000 }]]);
      now = 100_000;
      expect(m.record('producer_byte_rate', 'a', 'x', 10_000)).to.equal(0);
      expect(m.record('producer_byte_rate', 'b', 'x', 10_000)).to.equal(0); // another user: its own rate
      expect(m.record('producer_byte_rate', 'a', 'y', 10_000)).to.equal(10_000); // same user, other client: shared
      expect(m.maxValueInWindow('producer_byte_rate', 'a', 'x')).to.equal(10_000);
      expect([...m.throttleTotals()]).to.deep.equal([
        { type: 'producer_byte_rate', user: 'a', clientId: '', throttleMsTotal: 10_000, throttled: 1 },
      ]);
    });

    it('bounds a request_percentage throttle to one quota window, as Kafka; byte rates are not bounded', () => {
      configs = quotas([[{ 'client-id': 'busy' }, { request_percentage: 1, producer_byte_rate: 1 }]]);
      now = 200_000;
      // 500 (% of a thread) over the 10 s minimum window: 50 %, unbounded (50 - 1) / 1 × 10 s; bounded to 1 s
      expect(m.record('request_percentage', 'u', 'busy', 500)).to.equal(1000);
      // 50 bytes over 10 s: 5 B/s against 1 B/s, (5 - 1) / 1 × 10 s, not bounded
      expect(m.record('producer_byte_rate', 'u', 'busy', 50)).to.equal(40_000);
    });

    it('names the user of a principal as Kafka does', () => {
      expect(quotaUser('User:alice')).to.equal('alice');
      expect(quotaUser(undefined)).to.equal('ANONYMOUS');
    });
  });
});
