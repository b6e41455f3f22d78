/**
 * lib/warm-up.ts: after the ready line, `gregor start` loads the codecs of the APIs clients send first
 * and the native addons of the produce, read and write paths, one step per turn of the event loop,
 * instead of on the first request that needs each (GREGOR_WARM_UP=0: not at all).
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { startWarmUp } from '../../lib/warm-up.js';
import { startChildBroker, stopChildBroker, tempDir } from '../helpers/broker.js';
import { Cleanup } from '../helpers/cleanup.js';
import { PROJECT_ROOT } from '../helpers/project.js';
import { kafkajsRoundTrip } from '../helpers/roundtrip.js';

const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

/** The native addons (`<name>.node`) mapped into process `pid`. */
function addonsOf(pid: number): string[] {
  const names = new Set<string>();
  for (const m of readFileSync(`/proc/${pid}/maps`, 'utf8').matchAll(/([\w-]+)\.node$/gm)) names.add(m[1]!);
  return [...names].sort();
}

describe('warm-up after ready (lib/warm-up.ts)', function () {
  this.timeout(60_000);
  const cleanup = new Cleanup();
  afterEach(() => cleanup.run());

  it('runs the steps in order, one per turn of the event loop; a step that throws is skipped', async () => {
    const ran: string[] = [];
    const w = startWarmUp([
      () => ran.push('a'),
      () => {
        throw new Error('missing');
      },
      () => ran.push('c'),
    ]);
    expect(ran, 'nothing before the first turn').to.deep.equal([]);
    await turn();
    expect(ran).to.deep.equal(['a']);
    await w.done;
    expect(ran).to.deep.equal(['a', 'c']);
  });

  it('stop() drops the steps not yet run and resolves done', async () => {
    const ran: number[] = [];
    const w = startWarmUp([1, 2, 3, 4].map((n) => () => void ran.push(n)));
    await turn();
    w.stop();
    await w.done;
    await turn();
    await turn();
    expect(ran).to.deep.equal([1]);
  });

  it('the default steps load the codecs of the first-used APIs and nothing else (a fresh process)', () => {
    const dist = (f: string): string => JSON.stringify(join(PROJECT_ROOT, 'dist', f));
    const script = `
const { API_CODECS } = await import(${dist('protocol/generated/index.js')});
const { startWarmUp, FIRST_USED_APIS } = await import(${dist('lib/warm-up.js')});
const loaded = () => [...API_CODECS.values()].filter((e) => Object.getOwnPropertyDescriptor(e, 'request').get === undefined).map((e) => e.name).sort();
const before = loaded();
await startWarmUp().done;
const expected = FIRST_USED_APIS.map((k) => API_CODECS.get(k).name).sort();
console.log(JSON.stringify({ before, after: loaded(), expected }));`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(r.status, r.stderr).to.equal(0);
    const out = JSON.parse(r.stdout) as { before: string[]; after: string[]; expected: string[] };
    expect(out.before).to.deep.equal([]);
    expect(out.expected).to.include.members(['Fetch', 'Produce', 'ListOffsets', 'Metadata', 'ApiVersions']);
    expect(out.after).to.deep.equal(out.expected);
  });

  it('gregor start: the addons are loaded after ready with no request sent (GREGOR_WARM_UP=0: not until used); clients are served', async () => {
    const warm = await startChildBroker(cleanup.add(tempDir(), (d) => rmSync(d, { recursive: true, force: true })));
    cleanup.add(warm, stopChildBroker);
    const cold = await startChildBroker(
      cleanup.add(tempDir(), (d) => rmSync(d, { recursive: true, force: true })),
      0,
      {},
      { GREGOR_WARM_UP: '0' },
    );
    cleanup.add(cold, stopChildBroker);
    const pid = (b: typeof warm): number => b.child.pid ?? -1;
    const deadline = Date.now() + 10_000;
    while (!addonsOf(pid(warm)).includes('crc32c') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(addonsOf(pid(warm))).to.include.members(['crc32c', 'pread']);
    expect(addonsOf(pid(cold))).to.not.include.members(['crc32c']);
    expect(addonsOf(pid(cold))).to.not.include('pread');
    const kafka = new Kafka({ brokers: [warm.bootstrap], clientId: 'warm-up', logLevel: logLevel.NOTHING });
    expect(await kafkajsRoundTrip(kafka, 'warm-up', ['a', 'b', 'c'])).to.deep.equal(['a', 'b', 'c']);
  });
});
