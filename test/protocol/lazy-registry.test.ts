/**
 * The protocol registry (protocol/generated/index.ts) lists every API's key, name and versions at once
 * and loads the API's generated module when one of its codecs is first used (issue 14). Here: the
 * registry's facts equal the eager tables (API_KEYS) and each module's own codec object, the codecs it
 * hands out are that module's functions, and a fresh process has loaded none before a first use.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { API_KEYS } from '../../protocol/generated/api-keys.js';
import { API_CODECS, type ApiCodec, type MessageCodec } from '../../protocol/generated/index.js';
import { kebab } from '../../scripts/generate-protocol.js';
import { PROJECT_ROOT } from '../helpers/project.js';

/** The API's generated module, imported directly (eagerly), and its `<Name>Api` object. */
async function eagerCodec(name: string): Promise<ApiCodec> {
  const module = (await import(`../../protocol/generated/${kebab(name)}.js`)) as Record<string, ApiCodec | undefined>;
  const codec = module[`${name}Api`];
  if (codec === undefined) throw new Error(`${kebab(name)}.js has no ${name}Api`);
  return codec;
}

/** A message codec's read, write and size functions (compared by identity). */
function codecFunctions(codec: MessageCodec): unknown[] {
  return ['read', 'write', 'size'].map((k) => Object.getOwnPropertyDescriptor(codec, k)?.value as unknown);
}

describe('protocol registry: codecs loaded on first use', () => {
  it('lists every API of API_KEYS with the same name and version ranges', () => {
    expect([...API_CODECS.keys()]).to.deep.equal([...API_KEYS.keys()]);
    expect(API_CODECS.size).to.be.greaterThan(80);
    for (const [apiKey, info] of API_KEYS) {
      const entry = API_CODECS.get(apiKey);
      expect(entry, info.name).to.not.equal(undefined);
      const { name, minVersion, maxVersion, flexibleMinVersion } = info;
      expect({
        apiKey: entry?.apiKey,
        name: entry?.name,
        minVersion: entry?.minVersion,
        maxVersion: entry?.maxVersion,
        flexibleMinVersion: entry?.flexibleMinVersion,
      }).to.deep.equal({ apiKey, name, minVersion, maxVersion, flexibleMinVersion });
    }
  });

  it("yields the same versions and the very codec functions as each API's module imported eagerly", async () => {
    for (const entry of API_CODECS.values()) {
      const eager = await eagerCodec(entry.name);
      expect([entry.apiKey, entry.minVersion, entry.maxVersion, entry.flexibleMinVersion], entry.name).to.deep.equal([
        eager.apiKey,
        eager.minVersion,
        eager.maxVersion,
        eager.flexibleMinVersion,
      ]);
      for (const side of ['request', 'response'] as const) {
        const fns = codecFunctions(entry[side]);
        expect(fns.map((f) => typeof f)).to.deep.equal(['function', 'function', 'function']);
        expect(fns, `${entry.name} ${side}`).to.deep.equal(codecFunctions(eager[side]));
        // once loaded, plain properties: no loader runs on later uses
        expect(Object.getOwnPropertyDescriptor(entry, side)).to.have.property('value').and.not.have.property('get');
      }
    }
  });

  it('a fresh process has loaded no API module before a first use; decoding a Produce request loads Produce only', () => {
    const index = join(PROJECT_ROOT, 'dist/protocol/generated/index.js');
    const frame = join(PROJECT_ROOT, 'dist/protocol/frame.js');
    const script = `
const { API_CODECS } = await import(${JSON.stringify(index)});
const { encodeRequest, decodeRequest } = await import(${JSON.stringify(frame)});
const loaded = () => [...API_CODECS.values()].filter((e) => Object.getOwnPropertyDescriptor(e, 'request').get === undefined).map((e) => e.name);
const before = loaded();
const bytes = encodeRequest({ apiKey: 0, apiVersion: 9, correlationId: 7, clientId: 'c' }, { transactionalId: null, acks: 1, timeoutMs: 1000, topicData: [] });
const decoded = decodeRequest(bytes);
console.log(JSON.stringify({ before, after: loaded(), correlationId: decoded.header.correlationId, acks: decoded.body.acks }));`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(r.status, r.stderr).to.equal(0);
    expect(JSON.parse(r.stdout)).to.deep.equal({ before: [], after: ['Produce'], correlationId: 7, acks: 1 });
  });
});
