/**
 * The pieces behind /metrics and /v1/requests, without a broker: the windowed latency histogram,
 * the request log's ring, recording and filters, the per-topic meters, readiness conditions and the
 * admin.listener setting.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import { parseRequestLogQuery } from '../../../lib/admin/request-routes.js';
import { BrokerConfig, parseAdminListener } from '../../../lib/config.js';
import { BrokerMetrics } from '../../../lib/observability/broker-metrics.js';
import { BUCKETS, WindowedHistograms, bucketOf, bucketValue } from '../../../lib/observability/histogram.js';
import { RECORD_ALL_MAX, RequestLog } from '../../../lib/observability/request-log.js';
import { QUANTILES } from '../../../lib/observability/request-metrics.js';
import { Readiness } from '../../../lib/observability/readiness.js';
import { RequestOutcome, RequestTiming, type TimedConnection } from '../../../lib/observability/request-timing.js';
import { BrokerTopicMetrics, countedAsCaughtUp } from '../../../lib/observability/topic-metrics.js';

const MINUTE = 60_000;

function conn(id = 'c1', software?: { name: string; version: string }): TimedConnection {
  return {
    id,
    remoteAddress: '127.0.0.1',
    remotePort: 5000,
    listenerName: 'PLAINTEXT',
    ...(software !== undefined ? { clientSoftware: software } : {}),
  };
}

/** A finished request: received at `at`, `total` ms long, `remote` of it in the purgatory. */
function timing(o: {
  apiKey: number;
  clientId?: string;
  conn?: TimedConnection;
  at?: number;
  total?: number;
  remote?: number;
  errorCode?: number;
  partitionErrorCode?: number;
  outcome?: RequestOutcome;
  version?: number;
}): RequestTiming {
  const at = o.at ?? 1000;
  const t = new RequestTiming(o.conn ?? conn(), at, 100);
  t.apiKey = o.apiKey;
  t.apiVersion = o.version ?? 3;
  t.decoded = true;
  t.clientId = o.clientId ?? 'client-a';
  t.startedAt = at + 1;
  t.remoteMs = o.remote ?? 0;
  t.responseReadyAt = at + (o.total ?? 10) - 1;
  t.sendStartAt = t.responseReadyAt;
  t.sendDoneAt = at + (o.total ?? 10);
  t.errorCode = o.errorCode ?? 0;
  t.partitionErrorCode = o.partitionErrorCode ?? 0;
  t.outcome = o.outcome ?? RequestOutcome.RESPONSE;
  return t;
}

describe('admin: observability pieces', () => {
  describe('WindowedHistograms', () => {
    it('buckets any value to within 6.25% of itself and in order', () => {
      fc.assert(
        fc.property(fc.integer({ min: 0, max: 2 ** 31 - 1 }), (us) => {
          const b = bucketOf(us);
          expect(b).to.be.within(0, BUCKETS - 1);
          const mid = bucketValue(b);
          expect(Math.abs(mid - us)).to.be.at.most(Math.max(0.5, us / 16));
          if (us > 0) expect(bucketOf(us - 1)).to.be.at.most(b);
        }),
      );
    });

    it("gives Kafka's percentiles of the last minutes per timer, and the count since start", () => {
      const h = new WindowedHistograms(2);
      // timer 0: 1..1000 ms, one each, in minute 0; timer 1: always 3 ms
      for (let i = 1; i <= 1000; i++) {
        const slot = h.observe(10);
        slot[bucketOf(i * 1000)]!++;
        slot[BUCKETS + bucketOf(3000)]!++;
      }
      const [p50, p75, p95, p98, p99, p999] = h.quantiles(
        0,
        QUANTILES.map((q) => q.q),
        10 + MINUTE,
      );
      expect(p50).to.be.closeTo(500, 500 / 16);
      expect(p75).to.be.closeTo(750, 750 / 16);
      expect(p95).to.be.closeTo(950, 950 / 16);
      expect(p98).to.be.closeTo(980, 980 / 16);
      expect(p99).to.be.closeTo(990, 990 / 16);
      expect(p999).to.be.closeTo(999, 999 / 16);
      expect(h.count).to.equal(1000);
      for (const v of h.quantiles(1, [0.5, 0.999], 10)) expect(v, 'the other timer').to.be.closeTo(3, 3 / 16);
    });

    it('forgets observations older than the window (5 minutes), keeps count and sum', () => {
      const h = new WindowedHistograms(1);
      h.record(0, 900, 0);
      h.record(0, 1, 6 * MINUTE);
      // minute 0's 900 ms is outside minutes 2..6
      expect(h.quantiles(0, [0.99], 6 * MINUTE)[0]).to.be.closeTo(1, 0.1);
      expect(h.count).to.equal(2);
      expect(h.quantiles(0, [0.5], 20 * MINUTE)[0], 'nothing in the window: 0').to.equal(0);
      // a slot reused for a later minute starts empty
      const g = new WindowedHistograms(1);
      g.record(0, 500, 0);
      g.record(0, 2, 5 * MINUTE); // same slot as minute 0
      expect(g.quantiles(0, [0.999], 5 * MINUTE)[0]).to.be.closeTo(2, 0.2);
      // minutes 1..4 still count at minute 4
      const k = new WindowedHistograms(1);
      k.record(0, 100, 1 * MINUTE);
      k.record(0, 200, 2 * MINUTE);
      k.record(0, 300, 4 * MINUTE + 1);
      expect(k.quantiles(0, [0.5, 1], 4 * MINUTE + 2)).to.deep.equal([
        bucketValue(bucketOf(200_000)) / 1000,
        bucketValue(bucketOf(300_000)) / 1000,
      ]);
    });
  });

  describe('RequestLog', () => {
    it('keeps the last `size` requests, oldest first', () => {
      const log = new RequestLog(3);
      for (let i = 0; i < 5; i++) log.add(timing({ apiKey: 0, at: 1000 + i }));
      const got = log.query();
      expect(got.map((e) => e.time)).to.deep.equal([1002, 1003, 1004].map((at) => new Date(performance.timeOrigin + at).toISOString()));
      expect(log.status).to.include({ ringSize: 3, recordAll: false, source: 'ring', held: 3 });
    });

    it('filters by API, client (id or software), errors, connection, latency and limit', () => {
      const log = new RequestLog(100);
      log.add(timing({ apiKey: 0, clientId: 'producer-1', total: 5 }));
      log.add(
        timing({ apiKey: 1, clientId: 'consumer-1', conn: conn('c2', { name: 'librdkafka', version: '2.15.0' }), total: 500, remote: 490 }),
      );
      log.add(timing({ apiKey: 0, clientId: 'producer-1', partitionErrorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER }));
      log.add(timing({ apiKey: 3, clientId: 'producer-1', outcome: RequestOutcome.CLOSED }));
      log.add(timing({ apiKey: 18, clientId: 'x', errorCode: ErrorCode.UNSUPPORTED_VERSION }));
      expect(log.query({ api: 'produce' }).map((e) => e.apiKey)).to.deep.equal([0, 0]);
      expect(log.query({ api: '1' }).map((e) => e.api)).to.deep.equal(['Fetch']);
      expect(
        log.query({ client: 'librdkafka' }).map((e) => e.clientId),
        'software name matches',
      ).to.deep.equal(['consumer-1']);
      expect(log.query({ client: 'producer' }).length).to.equal(3);
      expect(log.query({ errors: true }).map((e) => [e.api, e.error, e.partitionError, e.outcome])).to.deep.equal([
        ['Produce', 'NONE', 'NOT_LEADER_OR_FOLLOWER', 'response'],
        ['Metadata', 'NONE', 'NONE', 'closed'],
        ['ApiVersions', 'UNSUPPORTED_VERSION', 'NONE', 'response'],
      ]);
      expect(log.query({ connection: 'c2' }).map((e) => e.clientSoftwareName)).to.deep.equal(['librdkafka']);
      const slow = log.query({ minMs: 100 });
      expect(slow).to.have.length(1);
      expect(slow[0]!.latencyMs).to.include({ total: 500, remote: 490 });
      expect(
        log.query({ limit: 2 }).map((e) => e.apiKey),
        'the newest two',
      ).to.deep.equal([3, 18]);
      expect(log.query({ limit: 0 })).to.deep.equal([]);
    });

    it('record-all keeps every request beyond the ring until cleared, and stops on request', () => {
      const log = new RequestLog(2);
      log.recordAll(true);
      for (let i = 0; i < 10; i++) log.add(timing({ apiKey: 0, at: i }));
      expect(log.query()).to.have.length(10);
      expect(log.status).to.include({ recordAll: true, source: 'recording', held: 10 });
      log.recordAll(false);
      log.add(timing({ apiKey: 1 }));
      expect(log.query(), 'stopped: kept, not growing').to.have.length(10);
      log.clear();
      expect(log.status).to.include({ source: 'ring', held: 0 });
      log.add(timing({ apiKey: 2 }));
      expect(log.query().map((e) => e.apiKey)).to.deep.equal([2]);
      expect(RECORD_ALL_MAX).to.be.at.least(100_000);
    });

    it('hands back evicted records for reuse only when no recording holds them', () => {
      const m = new BrokerMetrics({ requestLogSize: 1 });
      const a = m.begin(conn(), 1, 10);
      m.completed(a);
      const b = m.begin(conn(), 2, 10);
      expect(b, 'the ring still holds the first').to.not.equal(a);
      m.completed(b);
      const c = m.begin(conn('c9'), 3, 10);
      expect(c, 'the first, evicted, is reused').to.equal(a);
      expect(c.conn.id).to.equal('c9');
      expect(c.receivedAt).to.equal(3);
      expect(c.apiKey).to.equal(-1);
      m.requestLog.recordAll(true);
      m.completed(c);
      m.completed(m.begin(conn(), 4, 10));
      const d = m.begin(conn(), 5, 10);
      expect([a, b].includes(d), 'a recording holds them: nothing reused').to.equal(false);
    });

    it('query parameters: unknown ones and bad numbers are 400', () => {
      expect(parseRequestLogQuery(new URLSearchParams('api=Fetch&client=x&errors=1&limit=50&minMs=2.5&conn=c'))).to.deep.equal({
        api: 'Fetch',
        client: 'x',
        errors: true,
        limit: 50,
        minMs: 2.5,
        connection: 'c',
      });
      for (const q of ['apis=Fetch', 'limit=-1', 'limit=abc', 'minMs=']) {
        expect(() => parseRequestLogQuery(new URLSearchParams(q)), q)
          .to.throw()
          .with.property('status', 400);
      }
    });
  });

  describe('BrokerTopicMetrics', () => {
    it('counts appends, and per partition requests and failures from responses (unknown topics broker-wide only)', () => {
      const m = new BrokerTopicMetrics();
      m.produced('t', 10, 1000);
      m.produced('t', 0, 500); // a retried duplicate: nothing appended
      const first = m.produceResponse({
        responses: [
          {
            name: 't',
            partitionResponses: [
              { index: 0, errorCode: 0, baseOffset: 0n, recordErrors: [], errorMessage: null },
              { index: 1, errorCode: ErrorCode.CORRUPT_MESSAGE, baseOffset: -1n, recordErrors: [], errorMessage: null },
            ],
          },
          {
            name: 'nope',
            partitionResponses: [
              { index: 0, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, baseOffset: -1n, recordErrors: [], errorMessage: null },
            ],
          },
        ],
      });
      expect(first).to.equal(ErrorCode.CORRUPT_MESSAGE);
      const t = m.topic('t');
      expect(t).to.include({ messagesIn: 10, bytesIn: 1000, totalProduceRequests: 2, failedProduceRequests: 1 });
      expect(m.all).to.include({ messagesIn: 10, bytesIn: 1000, totalProduceRequests: 3, failedProduceRequests: 2 });
      expect(
        [...m.topics()].map(([n]) => n),
        'no meters for a topic that does not exist',
      ).to.deep.equal(['t']);
      const part = (partitionIndex: number, errorCode: number, records: Buffer | null) => ({
        partitionIndex,
        errorCode,
        highWatermark: 0n,
        records,
      });
      expect(
        m.fetchResponse(
          {
            responses: [
              {
                topic: 't',
                partitions: [part(0, 0, Buffer.alloc(70)), part(1, 0, Buffer.alloc(30)), part(2, ErrorCode.OFFSET_OUT_OF_RANGE, null)],
              },
            ],
          },
          false,
        ),
      ).to.equal(ErrorCode.OFFSET_OUT_OF_RANGE);
      expect(t).to.include({ bytesOut: 100, totalFetchRequests: 3, failedFetchRequests: 1 });
      m.fetchResponse({ responses: [{ topic: 't', partitions: [part(0, 0, Buffer.alloc(50))] }] }, true);
      expect(t.bytesOut, "a follower's fetch is not BytesOut").to.equal(100);
      m.forget('t');
      expect([...m.topics()]).to.deep.equal([]);
    });

    it('counts a caught-up answer (the fetch handler keeps them for idle consumers) as the walk of its partitions would', () => {
      const caughtUp = (topic: string, n: number) => ({
        topic,
        partitions: Array.from({ length: n }, (_, partitionIndex) => ({
          partitionIndex,
          errorCode: 0,
          highWatermark: 5n,
          records: Buffer.alloc(0),
        })),
      });
      const walked = new BrokerTopicMetrics();
      const counted = new BrokerTopicMetrics();
      const marked = [caughtUp('a', 100), caughtUp('b', 3), caughtUp('', 2)];
      for (const t of marked) countedAsCaughtUp(t);
      for (let i = 0; i < 3; i++) {
        expect(walked.fetchResponse({ responses: [caughtUp('a', 100), caughtUp('b', 3), caughtUp('', 2)] }, false)).to.equal(0);
        expect(counted.fetchResponse({ responses: marked }, false)).to.equal(0);
      }
      expect(counted.all).to.deep.equal(walked.all);
      expect(counted.all.totalFetchRequests).to.equal(315);
      expect([...counted.topics()]).to.deep.equal([...walked.topics()]);
      expect(counted.topic('a')).to.include({ totalFetchRequests: 300, bytesOut: 0, messagesOut: 0, failedFetchRequests: 0 });
    });
  });

  describe('Readiness', () => {
    it('is ready once every condition is met; a failed one keeps it booting with the reason', async () => {
      const r = new Readiness();
      const a = r.hold('listeners');
      let resolveLoad!: () => void;
      r.add('group coordinator', new Promise<void>((res) => (resolveLoad = res)));
      let ready = false;
      void r.whenReady().then(() => (ready = true));
      expect(r.isReady).to.equal(false);
      expect(r.pending.map((p) => p.name)).to.deep.equal(['listeners', 'group coordinator']);
      a.release();
      await Promise.resolve();
      expect(ready).to.equal(false);
      resolveLoad();
      await new Promise((res) => setImmediate(res));
      expect(ready).to.equal(true);
      expect(r.isReady).to.equal(true);
      const topics = r.hold('declared topics');
      expect(r.isReady, 'a condition added later makes it not ready again').to.equal(false);
      topics.fail('topic x: INVALID_CONFIG');
      expect(r.pending).to.deep.equal([{ name: 'declared topics', failed: 'topic x: INVALID_CONFIG' }]);
      topics.release(); // a failed condition stays failed
      expect(r.isReady).to.equal(false);
      r.hold('declared topics').release(); // a new hold of the name replaces it
      expect(r.isReady).to.equal(true);
    });
  });

  describe('admin.listener', () => {
    it('parses host:port, a port, 0 and none; refuses anything else with GREGOR_ERR_CONFIG', () => {
      expect(parseAdminListener('none')).to.equal(null);
      expect(parseAdminListener('NONE')).to.equal(null);
      expect(parseAdminListener('0')).to.deep.equal({ host: '127.0.0.1', port: 0 });
      expect(parseAdminListener('9644')).to.deep.equal({ host: '127.0.0.1', port: 9644 });
      expect(parseAdminListener('0.0.0.0:0')).to.deep.equal({ host: '0.0.0.0', port: 0 });
      expect(parseAdminListener('[::1]:9644')).to.deep.equal({ host: '::1', port: 9644 });
      expect(parseAdminListener(':9700')).to.deep.equal({ host: '127.0.0.1', port: 9700 });
      for (const bad of ['localhost', 'host:port', '1:2:3', '70000', ''])
        expect(() => parseAdminListener(bad), bad).to.throw(/GREGOR_ERR_CONFIG: admin.listener/);
      expect(() => new BrokerConfig({ overrides: { 'admin.listener': 'nope' } })).to.throw(
        /GREGOR_ERR_CONFIG: admin.listener=nope: expected host:port/,
      );
      const c = new BrokerConfig();
      expect(c.string('admin.listener')).to.equal('127.0.0.1:9644');
      expect(c.bool('admin.listener.allow.remote')).to.equal(false);
      expect(c.int('admin.requests.log.size')).to.equal(1000);
      expect(() => new BrokerConfig({ overrides: { 'admin.requests.log.size': '-1' } })).to.throw(/GREGOR_ERR_CONFIG/);
    });
  });
});
