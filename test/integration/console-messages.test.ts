/**
 * The web console's message browser, consumer-group and request APIs (/ui/api, issue 19) against a
 * real broker child process, with data produced and consumed by kafkajs: browsing from every kind
 * of start, filtering and text search, export, the produce form's endpoint, live tail over SSE,
 * group lag and offset resets, the request log and fault rules.
 */
import { expect } from 'chai';
import type { Kafka } from 'kafkajs';
import { Cleanup } from '../helpers/cleanup.js';
import { type ConsoleClient, createTopic, startConsoleBroker, until } from '../helpers/console.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('web console API (/ui/api): messages, groups, requests', function () {
  this.timeout(60_000);
  const cleanup = new Cleanup();
  let kafka: Kafka;
  let ui: ConsoleClient;

  before(async () => {
    ({ kafka, ui } = await startConsoleBroker(cleanup, 'gregor-console-msgs-'));
  });
  after(() => cleanup.run());

  describe('messages', () => {
    const T = 'console-msgs';
    let t0 = 0;
    let t1 = 0;
    before(async () => {
      await createTopic(kafka, T, 2);
      const producer = kafka.producer();
      await producer.connect();
      t0 = Date.now();
      for (let i = 0; i < 20; i++) {
        await producer.send({
          topic: T,
          messages: [
            {
              partition: i % 2,
              key: `order-${i}`,
              value: JSON.stringify({ id: i, status: i % 5 === 0 ? 'cancelled' : 'shipped', total: i * 10 }),
              headers: { source: i % 4 === 0 ? 'mobile-app' : 'web' },
            },
          ],
        });
        if (i === 9) {
          await sleep(20);
          t1 = Date.now();
          await sleep(20);
        }
      }
      // a later millisecond than record 19's: "all partitions" is in timestamp order, and a tie puts partition 0 first
      await sleep(3);
      await producer.send({ topic: T, messages: [{ partition: 0, key: Buffer.from([0, 1, 2, 255]), value: 'plain text value' }] });
      await producer.disconnect();
    });

    it('browses from the start, the end, an offset and a timestamp, per partition or all', async () => {
      const start = (await ui.get(`/topics/${T}/messages?from=start&limit=100`)).body;
      expect(start.records).to.have.length(21);
      expect(start.atEnd).to.equal(true);
      const first = start.records[0];
      expect(first).to.include({ partition: 0, offset: '0' });
      expect(first.key).to.include({ encoding: 'text' });
      expect(Buffer.from(first.key.base64, 'base64').toString()).to.equal('order-0');
      expect(first.value.encoding).to.equal('json');
      expect(JSON.parse(Buffer.from(first.value.base64, 'base64').toString())).to.deep.equal({ id: 0, status: 'cancelled', total: 0 });
      expect(first.headers).to.have.length(1);
      expect(first.headers[0].key).to.equal('source');
      const last = start.records[20];
      expect(last.key.encoding).to.equal('binary');
      expect(last.value.encoding).to.equal('text');
      const p1 = (await ui.get(`/topics/${T}/messages?from=start&partition=1&limit=3`)).body;
      expect(p1.records.map((r: { partition: number; offset: string }) => `${r.partition}:${r.offset}`)).to.deep.equal([
        '1:0',
        '1:1',
        '1:2',
      ]);
      expect(p1.next).to.deep.equal({ 1: '3' });
      const more = (await ui.get(`/topics/${T}/messages?from=cursor&partition=1&cursor=1:3&limit=3`)).body;
      expect(more.records.map((r: { offset: string }) => r.offset)).to.deep.equal(['3', '4', '5']);
      const end = (await ui.get(`/topics/${T}/messages?from=end&partition=0&limit=2`)).body;
      expect(end.records.map((r: { offset: string }) => r.offset)).to.deep.equal(['9', '10']);
      const at = (await ui.get(`/topics/${T}/messages?from=offset&offset=8&partition=0&limit=50`)).body;
      expect(at.records.map((r: { offset: string }) => r.offset)).to.deep.equal(['8', '9', '10']);
      const byTime = (await ui.get(`/topics/${T}/messages?from=timestamp&timestamp=${t1}&limit=50`)).body;
      expect(byTime.records).to.have.length(11);
      expect(byTime.records.every((r: { timestamp: number }) => r.timestamp >= t1)).to.equal(true);
      expect((await ui.get(`/topics/${T}/messages?from=timestamp&timestamp=${t0 - 1}&limit=50`)).body.records).to.have.length(21);
      expect((await ui.get(`/topics/${T}/messages?partition=7`)).status).to.equal(400);
      expect((await ui.get(`/topics/${T}/messages?from=yesterday`)).status).to.equal(400);
    });

    it('filters with the expression language and searches text in keys, values and headers', async () => {
      const q = (f: string) => ui.get(`/topics/${T}/messages?from=start&limit=100&filter=${encodeURIComponent(f)}`);
      const cancelled = (await q('value.status == "cancelled" && value.total >= 50')).body.records as { key: { base64: string } }[];
      expect(cancelled.map((r) => Buffer.from(r.key.base64, 'base64').toString()).sort()).to.deep.equal([
        'order-10',
        'order-15',
        'order-5',
      ]);
      expect((await q('headers.source startsWith "mobile" and partition == 0')).body.records).to.have.length(5);
      expect((await q('key matches "^order-1[0-9]$"')).body.records).to.have.length(10);
      const bad = await q('value.status = "x"');
      expect(bad.status).to.equal(400);
      expect(bad.body.error).to.equal('GREGOR_ERR_CONSOLE_FILTER');
      const rce = await q('constructor.constructor("return process")().exit(1)');
      expect(rce.status).to.equal(400);
      expect(rce.body.error).to.equal('GREGOR_ERR_CONSOLE_FILTER');
      // the broker is still there
      expect((await ui.get('/overview')).status).to.equal(200);
      const text = (await ui.get(`/topics/${T}/messages?from=start&limit=100&q=MOBILE`)).body.records;
      expect(text).to.have.length(5);
      expect((await ui.get(`/topics/${T}/messages?from=start&limit=100&q=plain%20text`)).body.records).to.have.length(1);
    });

    it('exports the selection as JSON lines and as CSV', async () => {
      const jl = await fetch(
        `${ui.base}/ui/api/topics/${T}/export?format=jsonl&from=start&partition=0&filter=${encodeURIComponent('value.status == "shipped"')}`,
      );
      expect(jl.status).to.equal(200);
      expect(jl.headers.get('content-disposition')).to.equal(`attachment; filename="${T}.jsonl"`);
      const lines = (await jl.text())
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { partition: number; value: string; headers: unknown[] });
      expect(lines).to.have.length(8);
      expect(lines.every((l) => l.partition === 0 && JSON.parse(l.value).status === 'shipped')).to.equal(true);
      const csv = await fetch(`${ui.base}/ui/api/topics/${T}/export?format=csv&from=start&limit=1000`);
      const rows = (await csv.text()).trim().split('\r\n');
      expect(rows[0]).to.equal('topic,partition,offset,timestamp,key,value,headers');
      expect(rows).to.have.length(22);
      expect(rows[1]).to.match(/^console-msgs,0,0,\d+,order-0,"\{""id"":0,""status"":""cancelled"",""total"":0\}",/);
    });

    it('produces a record from the form fields, which kafkajs then reads', async () => {
      const bad = await ui.post(`/topics/${T}/messages`, { value: '{not json', valueEncoding: 'json' });
      expect(bad.status).to.equal(400);
      expect((await ui.post(`/topics/${T}/messages`, { value: 'x', partition: 9 })).status).to.equal(400);
      const made = await ui.post(`/topics/${T}/messages`, {
        key: 'form-key',
        value: '{"from":"form","n":1}',
        valueEncoding: 'json',
        partition: 1,
        headers: [{ key: 'origin', value: 'console' }],
      });
      expect(made.status, JSON.stringify(made.body)).to.equal(201);
      expect(made.body).to.include({ partition: 1, offset: '10' });
      const bin = await ui.post(`/topics/${T}/messages`, {
        value: Buffer.from([1, 2, 3]).toString('base64'),
        valueEncoding: 'base64',
        partition: 1,
      });
      expect(bin.body.offset).to.equal('11');
      const consumer = kafka.consumer({ groupId: 'console-produce-check' });
      await consumer.connect();
      await consumer.subscribe({ topic: T, fromBeginning: true });
      const got: { key: string | undefined; value: Buffer | null; headers: unknown }[] = [];
      await consumer.run({
        eachMessage: ({ partition, message }) => {
          if (partition === 1 && Number(message.offset) >= 10)
            got.push({ key: message.key?.toString(), value: message.value, headers: message.headers });
          return Promise.resolve();
        },
      });
      await until("kafkajs to read the console's records", () => Promise.resolve(got.length >= 2 ? true : undefined));
      await consumer.disconnect();
      expect(got[0]?.key).to.equal('form-key');
      expect(JSON.parse(got[0]?.value?.toString() ?? '')).to.deep.equal({ from: 'form', n: 1 });
      expect(String((got[0]?.headers as Record<string, Buffer>)['origin'])).to.equal('console');
      expect([...(got[1]?.value ?? [])]).to.deep.equal([1, 2, 3]);
    });

    /** A live tail's events as they come (`close` ends it). */
    async function openTail(query: string) {
      const events: { event: string; data: any }[] = [];
      const ctl = new AbortController();
      const res = await fetch(`${ui.base}/ui/api/topics/${T}/tail?${query}`, { signal: ctl.signal });
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-type')).to.match(/^text\/event-stream/);
      const reader = res.body!.getReader();
      let buf = '';
      const pump = (async () => {
        for (;;) {
          const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
          if (done) return;
          buf += Buffer.from(value).toString();
          let i;
          while ((i = buf.indexOf('\n\n')) >= 0) {
            const block = buf.slice(0, i);
            buf = buf.slice(i + 2);
            const ev = /^event: (.*)$/m.exec(block)?.[1];
            const data = /^data: (.*)$/m.exec(block)?.[1];
            if (ev !== undefined && data !== undefined) events.push({ event: ev, data: JSON.parse(data) });
          }
        }
      })();
      return {
        events,
        close: async () => {
          ctl.abort();
          await pump;
        },
      };
    }

    it('tails new records over Server-Sent Events, filtered, as kafkajs produces them', async () => {
      const { events, close } = await openTail(`filter=${encodeURIComponent('value.live == true')}`);
      await until('the tail to be ready', () => Promise.resolve(events.some((e) => e.event === 'ready') ? true : undefined));
      const producer = kafka.producer();
      await producer.connect();
      await producer.send({
        topic: T,
        messages: [
          { value: '{"live":false}', partition: 0 },
          { value: '{"live":true,"n":1}', partition: 0 },
        ],
      });
      await producer.send({ topic: T, messages: [{ value: '{"live":true,"n":2}', partition: 1 }] });
      await producer.disconnect();
      const records = await until('two live records', () => {
        const rs = events.filter((e) => e.event === 'record');
        return Promise.resolve(rs.length >= 2 ? rs : undefined);
      });
      await close();
      const values = records.map((r) => JSON.parse(Buffer.from(r.data.value.base64, 'base64').toString()).n).sort();
      expect(values).to.deep.equal([1, 2]);
      expect(records.length).to.equal(2);
    });

    it('keeps up with a burst: of 500 records in one batch the tail sends the newest 50 and says how many it skipped', async () => {
      const { events, close } = await openTail('partition=1');
      await until('the tail to be ready', () => Promise.resolve(events.some((e) => e.event === 'ready') ? true : undefined));
      const from = BigInt(events.find((e) => e.event === 'ready')?.data.positions['1'] as string);
      const producer = kafka.producer();
      await producer.connect();
      await producer.send({ topic: T, messages: Array.from({ length: 500 }, (_v, i) => ({ partition: 1, value: `burst-${i}` })) });
      await producer.disconnect();
      const records = await until('50 records', () => {
        const rs = events.filter((e) => e.event === 'record');
        return Promise.resolve(rs.length >= 50 ? rs : undefined);
      });
      await close();
      expect(events.filter((e) => e.event === 'skipped').reduce((n, e) => n + (e.data.records as number), 0)).to.equal(450);
      expect(records.map((r) => BigInt(r.data.offset as string) - from)).to.deep.equal(
        Array.from({ length: 50 }, (_v, i) => BigInt(450 + i)),
      );
      expect(Buffer.from(records[49]!.data.value.base64 as string, 'base64').toString()).to.equal('burst-499');
    });
  });

  describe('consumer groups and requests', () => {
    const T = 'console-lag';
    it("shows a kafkajs group's members, assignment and lag; refuses a reset while it is active and applies a previewed one when empty", async () => {
      await createTopic(kafka, T, 2);
      const producer = kafka.producer();
      await producer.connect();
      await producer.send({ topic: T, messages: Array.from({ length: 10 }, (_v, i) => ({ value: `x${i}`, partition: i % 2 })) });
      const consumer = kafka.consumer({ groupId: 'console-lag-g' });
      await consumer.connect();
      await consumer.subscribe({ topic: T, fromBeginning: true });
      let read = 0;
      await consumer.run({
        eachMessage: () => {
          read++;
          return Promise.resolve();
        },
      });
      // lag falls to 0 once the group has read and committed everything
      const g = await until('lag 0 on both partitions', async () => {
        const d = (await ui.get('/groups/console-lag-g')).body;
        return d.partitions?.length === 2 && d.partitions.every((p: { lag: number }) => p.lag === 0) && d.members.length === 1
          ? d
          : undefined;
      });
      expect(g.state).to.equal('Stable');
      expect(g.members[0].assignment.map((a: { partition: number }) => a.partition).sort()).to.deep.equal([0, 1]);
      expect(read).to.equal(10);
      const list = (await ui.get('/groups')).body.groups as { groupId: string; state: string; members: number }[];
      expect(list.find((x) => x.groupId === 'console-lag-g')).to.include({ state: 'Stable', members: 1 });
      const refused = await ui.post('/groups/console-lag-g/reset', { to: 'start', execute: true });
      expect(refused.status).to.equal(409);
      expect(refused.body.error).to.equal('GREGOR_ERR_CONSOLE_GROUP_NOT_EMPTY');
      await consumer.disconnect();
      // produced while nobody consumes: lag in messages and in time
      await producer.send({ topic: T, messages: [{ value: 'late', partition: 0 }] });
      await producer.disconnect();
      const lagged = await until('lag 1 with the group empty', async () => {
        const d = (await ui.get('/groups/console-lag-g')).body;
        return d.state === 'Empty' && d.partitions.find((p: { partition: number }) => p.partition === 0)?.lag === 1 ? d : undefined;
      });
      expect(lagged.partitions.find((p: { partition: number }) => p.partition === 0).lagMs).to.be.a('number');
      expect(lagged).to.include({ partitionCount: 2, totalLag: 1 });
      const preview = await ui.post('/groups/console-lag-g/reset', { to: 'start' });
      expect(preview.status, JSON.stringify(preview.body)).to.equal(200);
      expect(preview.body.executed).to.equal(false);
      expect(preview.body.partitions.map((p: { newOffset: string }) => p.newOffset)).to.deep.equal(['0', '0']);
      expect(
        (await ui.get('/groups/console-lag-g')).body.partitions.map((p: { committedOffset: string }) => p.committedOffset),
      ).to.deep.equal(['5', '5']);
      const applied = await ui.post('/groups/console-lag-g/reset', { to: 'offset', offset: 2, execute: true });
      expect(applied.status).to.equal(200);
      expect(
        (await ui.get('/groups/console-lag-g')).body.partitions.map((p: { committedOffset: string }) => p.committedOffset),
      ).to.deep.equal(['2', '2']);
      // the group re-reads from there
      const again = kafka.consumer({ groupId: 'console-lag-g' });
      await again.connect();
      await again.subscribe({ topic: T });
      const reread: string[] = [];
      await again.run({
        eachMessage: ({ partition, message }) => {
          reread.push(`${partition}:${message.offset}`);
          return Promise.resolve();
        },
      });
      await until('the group to re-read 7 records', () => Promise.resolve(reread.length >= 7 ? true : undefined));
      await again.disconnect();
      expect(reread.filter((x) => x.startsWith('0:')).sort()).to.deep.equal(['0:2', '0:3', '0:4', '0:5']);
      expect((await ui.get('/groups/nobody')).status).to.equal(404);
    });

    it('shows the request log and adds and removes fault rules', async () => {
      const log = (await ui.get('/requests?api=Produce&limit=5')).body;
      expect(log.requests.length).to.be.greaterThan(0);
      expect(log.requests.every((r: { api: string }) => r.api === 'Produce')).to.equal(true);
      const added = await ui.post('/faults', { apiKey: 'Metadata', action: 'delay', delayMs: 1, times: 1 });
      expect(added.status, JSON.stringify(added.body)).to.equal(201);
      const id = added.body.ids[0] as string;
      expect(((await ui.get('/faults')).body.faults as { id: string }[]).map((f) => f.id)).to.include(id);
      expect(
        ((await fetch(`${ui.base}/v1/faults`).then((r) => r.json())) as { faults: { id: string }[] }).faults.map((f) => f.id),
      ).to.include(id);
      expect((await ui.post('/faults', { apiKey: 'Nope', action: 'error' })).status).to.equal(400);
      expect((await ui.send('DELETE', `/faults/${id}`)).status).to.equal(200);
      expect((await ui.get('/faults')).body.faults).to.deep.equal([]);
    });
  });
});
