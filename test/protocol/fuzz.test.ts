import { expect } from 'chai';
import fc from 'fast-check';
import { ProtocolError } from '../../protocol/codec/errors.js';
import { decodeRequest, decodeResponse, encodeRequest } from '../../protocol/frame.js';
import { API_CODECS } from '../../protocol/generated/index.js';
import { Rng, SCHEMA, randomStruct } from '../helpers/schema-values.js';

/** Decoding must yield a value or a ProtocolError: anything else (RangeError, TypeError…) is a bug. */
function decodeOrProtocolError(fn: () => unknown): void {
  try {
    fn();
  } catch (e) {
    if (!(e instanceof ProtocolError)) throw e;
  }
}

const requests = Object.values(SCHEMA).filter((m) => m.kind === 'request' && m.apiKey !== undefined);

function validFrame(apiKey: number, v: number, seed: number): Buffer {
  const msg = requests.find((m) => m.apiKey === apiKey);
  if (msg === undefined) throw new Error(`no schema for ${apiKey}`);
  const body = randomStruct(msg, msg.root, v, new Rng(seed));
  return encodeRequest({ apiKey, apiVersion: v, correlationId: seed, clientId: 'fuzz' }, body);
}

const versions: [number, number][] = [];
for (const api of API_CODECS.values()) for (let v = api.minVersion; v <= api.maxVersion; v++) versions.push([api.apiKey, v]);

describe('decoders under hostile input (fast-check)', () => {
  it('arbitrary bytes after a valid header: a value or a ProtocolError', () => {
    fc.assert(
      fc.property(fc.constantFrom(...versions), fc.uint8Array({ maxLength: 200 }), ([apiKey, v], tail) => {
        const head = Buffer.alloc(8);
        head.writeInt16BE(apiKey, 0);
        head.writeInt16BE(v, 2);
        head.writeInt32BE(1, 4);
        decodeOrProtocolError(() => decodeRequest(Buffer.concat([head, Buffer.from(tail)])));
      }),
      { numRuns: 3000 },
    );
  });

  it('structurally mutated valid frames (bit flips, truncation, insertion): a value or a ProtocolError', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...versions),
        fc.integer({ min: 1, max: 1e6 }),
        fc.array(fc.tuple(fc.constantFrom('flip', 'truncate', 'insert', 'max'), fc.nat(), fc.nat(255)), { minLength: 1, maxLength: 4 }),
        ([apiKey, v], seed, edits) => {
          let frame = validFrame(apiKey, v, seed);
          for (const [kind, pos, byte] of edits) {
            const at = 8 + (pos % Math.max(1, frame.length - 8));
            if (kind === 'flip') frame[at] = (frame[at] ?? 0) ^ (1 << (byte % 8));
            else if (kind === 'truncate') frame = frame.subarray(0, at);
            else if (kind === 'insert') frame = Buffer.concat([frame.subarray(0, at), Buffer.from([byte]), frame.subarray(at)]);
            else if (at + 4 <= frame.length) frame.writeInt32BE(0x7fffffff, at);
          }
          decodeOrProtocolError(() => decodeRequest(frame));
        },
      ),
      { numRuns: 5000 },
    );
  });

  it('responses too: arbitrary bodies decode to a value or a ProtocolError', () => {
    fc.assert(
      fc.property(fc.constantFrom(...versions), fc.uint8Array({ maxLength: 200 }), ([apiKey, v], body) => {
        decodeOrProtocolError(() => decodeResponse(apiKey, v, Buffer.from(body)));
      }),
      { numRuns: 3000 },
    );
  });

  it('huge declared lengths fail fast without allocating them', () => {
    for (const [apiKey, v] of versions) {
      const frame = validFrame(apiKey, v, 42);
      for (let at = 8; at + 4 <= frame.length; at += 3) {
        const copy = Buffer.from(frame);
        copy.writeInt32BE(0x7fffffff, at);
        const before = process.memoryUsage().arrayBuffers;
        decodeOrProtocolError(() => decodeRequest(copy));
        // Nothing near the declared 2 GiB may have been allocated.
        expect(process.memoryUsage().arrayBuffers - before).to.be.lessThan(64 * 1024 * 1024);
      }
    }
  });
});
