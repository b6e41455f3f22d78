import { expect } from 'chai';
import { Reader } from '../../protocol/codec/reader.js';
import { Writer } from '../../protocol/codec/writer.js';
import { API_CODECS } from '../../protocol/generated/index.js';
import { kebab } from '../../scripts/generate-protocol.js';
import { Rng, SCHEMA, containsValue, randomStruct, type MessageDescriptor } from '../helpers/schema-values.js';

interface Codec {
  read(r: Reader, v: number): unknown;
  write(w: Writer, m: never, v: number): void;
  size(m: never, v: number): number;
}

async function codecFor(name: string, msg: MessageDescriptor): Promise<Codec> {
  if (msg.apiKey !== undefined && (msg.kind === 'request' || msg.kind === 'response')) {
    const api = API_CODECS.get(msg.apiKey);
    if (api === undefined) throw new Error(`no codec for API ${msg.apiKey}`);
    return msg.kind === 'request' ? api.request : api.response;
  }
  const mod = (await import(`../../protocol/generated/data/${kebab(name)}.js`)) as Record<string, Codec>;
  const schema = mod[`${name}Schema`];
  if (schema === undefined) throw new Error(`no schema export for ${name}`);
  return schema;
}

function encode(codec: Codec, m: unknown, v: number): Buffer {
  const w = Writer.alloc(codec.size(m as never, v));
  codec.write(w, m as never, v);
  return w.done();
}

const SAMPLES = 4;

describe('generated codecs: encode → decode → encode for every message × version', () => {
  const names = Object.keys(SCHEMA).sort();
  it('covers every API of the reference, both directions', () => {
    const apis = new Set(
      Object.values(SCHEMA)
        .filter((m) => m.apiKey !== undefined)
        .map((m) => m.apiKey),
    );
    expect(apis.size).to.equal(API_CODECS.size);
    expect(API_CODECS.size).to.be.greaterThan(80);
  });
  for (const name of names) {
    const msg = SCHEMA[name];
    if (msg === undefined) continue;
    it(`${name} v${msg.valid[0]}-${msg.valid[1]}`, async () => {
      const codec = await codecFor(name, msg);
      for (let v = msg.valid[0]; v <= msg.valid[1]; v++) {
        for (let s = 0; s < SAMPLES; s++) {
          const rng = new Rng(v * 7919 + s * 104729 + name.length);
          const value = randomStruct(msg, msg.root, v, rng);
          const bytes = encode(codec, value, v);
          const r = new Reader(bytes);
          const decoded = codec.read(r, v);
          r.finish(true);
          const diff = containsValue(value, decoded);
          if (diff !== null) throw new Error(`${name} v${v} sample ${s}: ${diff}`);
          const again = encode(codec, decoded, v);
          if (!again.equals(bytes)) throw new Error(`${name} v${v} sample ${s}: re-encoding differs`);
        }
      }
    });
  }
});
