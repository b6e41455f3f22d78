/**
 * Golden frames captured from real clients (test/fixtures/frames, see its README): every request and
 * response decodes and re-encodes byte-identically, and the record batches / message sets in each
 * client's Produce requests decode to exactly the records the client was asked to send.
 */
import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeRequest, decodeResponse, encodeRequest, encodeResponse } from '../../protocol/frame.js';
import type { ProduceRequest } from '../../protocol/generated/produce.js';
import { decodeRecords } from '../../protocol/records/index.js';
import { PROJECT_ROOT } from '../helpers/project.js';

interface Frame {
  seq: number;
  direction: 'request' | 'response';
  apiKey: number;
  apiVersion: number;
  correlationId: number;
  connection: number;
  hex: string;
}
interface SentRecord {
  key: string | null;
  value: string;
  headers: { key: string; value: string }[];
}
interface Fixture {
  client: string;
  sent: { batches: { codec: string; partition: number; requestSeqs: number[]; records: SentRecord[] }[] };
  frames: Frame[];
}

const DIR = join(PROJECT_ROOT, 'test/fixtures/frames');
const fixtures: Fixture[] = readdirSync(DIR)
  .filter((d) => existsSync(join(DIR, d, 'frames.json')))
  .map((d) => JSON.parse(readFileSync(join(DIR, d, 'frames.json'), 'utf8')) as Fixture);

describe('golden frames from real clients', () => {
  it('has fixtures from kafkajs, librdkafka 2.15, kcat and kafka-python (auto and 0.10), and kafkajs and librdkafka 2.15 against gregor', () => {
    expect(fixtures.map((f) => f.client).sort()).to.deep.equal([
      'confluent',
      'gregor-confluent',
      'gregor-kafkajs',
      'kafka-python-0.10',
      'kafka-python-auto',
      'kafkajs',
      'kcat',
    ]);
  });

  for (const fx of fixtures) {
    describe(fx.client, () => {
      it(`re-encodes all ${fx.frames.length} frames byte-identically`, () => {
        for (const f of fx.frames) {
          const bytes = Buffer.from(f.hex, 'hex');
          const where = `${fx.client} seq ${f.seq} ${f.direction} api ${f.apiKey} v${f.apiVersion}`;
          if (f.direction === 'request') {
            const d = decodeRequest(bytes);
            expect(d.header.apiKey, where).to.equal(f.apiKey);
            const again = encodeRequest(
              {
                apiKey: d.header.apiKey,
                apiVersion: d.header.apiVersion,
                correlationId: d.header.correlationId,
                clientId: d.header.clientId,
                ...(d.header.taggedFields ? { taggedFields: d.header.taggedFields } : {}),
              },
              d.body,
            );
            // Known librdkafka quirk (2.15 here, gregor-confluent): a Metadata v9+ request for all topics
            // (topics = null) carries 3 stray bytes `010000` after the body's tagged-field section. Brokers
            // stop reading at the end of the body and ignore them; our decoder does the same, so such a
            // frame cannot re-encode identically: compare without the 3 bytes and check they are exactly those.
            const stray =
              f.apiKey === 3 && f.apiVersion >= 9 && fx.client.endsWith('confluent') && (d.body as { topics: unknown }).topics === null
                ? 3
                : 0;
            expect(again.toString('hex') + f.hex.slice(f.hex.length - 2 * stray), where).to.equal(f.hex);
            if (stray) expect(f.hex.slice(-2 * stray), where).to.equal('010000');
          } else {
            // librdkafka's mock answers an unsupported ApiVersions v3 with a body that is valid in no version
            // (the fixture README explains); its clients read only the error code. Nothing to re-encode there.
            if (f.apiKey === 18 && f.apiVersion === 3 && bytes.readInt16BE(4) === 35) continue;
            // The same mock (librdkafka 2.0.2) appends 4 stray bytes to ListOffsets v4+ responses, after the
            // leader epoch; the client ignores them. Compare without them.
            const body = f.apiKey === 2 && f.apiVersion >= 4 && fx.client === 'confluent' ? bytes.subarray(0, bytes.length - 4) : bytes;
            const d = decodeResponse(f.apiKey, f.apiVersion, body);
            const again = encodeResponse(
              f.apiKey,
              f.apiVersion,
              d.correlationId,
              d.body,
              d.taggedFields ? { taggedFields: d.taggedFields } : {},
            );
            expect(again.toString('hex'), where).to.equal(body.toString('hex'));
          }
        }
      });

      it('decodes every produced batch to the records that were sent', () => {
        const bySeq = new Map(fx.frames.map((f) => [f.seq, f]));
        let checked = 0;
        for (const b of fx.sent.batches) {
          const got: SentRecord[] = [];
          for (const seq of b.requestSeqs) {
            const f = bySeq.get(seq);
            if (f === undefined) throw new Error(`${fx.client}: request ${seq} is not in the fixture`);
            const req = decodeRequest(Buffer.from(f.hex, 'hex')).body as ProduceRequest;
            for (const td of req.topicData) {
              for (const pd of td.partitionData) {
                if (pd.index !== b.partition || pd.records === null) continue;
                for (const r of decodeRecords(pd.records, { maxOutput: 1 << 24 }).records) {
                  got.push({
                    key: r.key === null ? null : r.key.toString(),
                    value: r.value?.toString() ?? '',
                    headers: r.headers.map((h) => ({ key: h.key, value: h.value?.toString() ?? '' })),
                  });
                }
              }
            }
          }
          const wanted = b.records.map((r) => r.value);
          const mine = got.filter((r) => wanted.includes(r.value));
          expect(mine, `${fx.client} ${b.codec} partition ${b.partition}`).to.deep.equal(b.records);
          checked++;
        }
        expect(checked).to.be.greaterThan(0);
      });
    });
  }
});
