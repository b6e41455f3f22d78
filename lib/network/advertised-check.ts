/**
 * After start-up, dials each advertised listener that differs from the address the broker bound, and
 * logs one warning per listener that clients will not reach: the host does not resolve, nothing accepts
 * connections there, or another broker (another cluster id) answers. Runs in the background; it never
 * delays readiness and stops when the broker stops.
 */
import { lookup } from 'node:dns/promises';
import net from 'node:net';
import { decodeResponse, encodeRequest } from '../../protocol/frame.js';
import type { Listener } from '../config.js';
import type { Logger } from '../observability/logger.js';

export interface AdvertisedPair {
  bound: Listener;
  advertised: Listener;
}

export interface AdvertisedProblem {
  listener: string;
  advertised: string;
  problem: 'unresolved' | 'unreachable' | 'other-broker';
  detail: string;
}

const METADATA = 3;
const METADATA_VERSION = 2; // the first with the cluster id (Kafka 0.10.1)

/** What is wrong with reaching `adv` (null: fine, or not knowable). */
export async function probeAdvertised(
  adv: Listener,
  clusterId: string,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<Omit<AdvertisedProblem, 'listener' | 'advertised'> | null> {
  try {
    await lookup(adv.host);
  } catch (e) {
    return { problem: 'unresolved', detail: (e as NodeJS.ErrnoException).code ?? String(e) };
  }
  if (signal?.aborted === true) return null;
  return new Promise((resolve) => {
    const socket = net.connect({ host: adv.host, port: adv.port });
    let connected = false;
    let buf = Buffer.alloc(0);
    const done = (r: Omit<AdvertisedProblem, 'listener' | 'advertised'> | null) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      socket.destroy();
      resolve(r);
    };
    const onAbort = () => done(null);
    signal?.addEventListener('abort', onAbort);
    const timer = setTimeout(
      () => done(connected ? null : { problem: 'unreachable', detail: `no connection within ${timeoutMs} ms` }),
      timeoutMs,
    );
    timer.unref();
    socket.unref();
    socket.once('error', (e: NodeJS.ErrnoException) => done(connected ? null : { problem: 'unreachable', detail: e.code ?? e.message }));
    socket.once('close', () => done(null)); // closed without an answer: an old broker refusing v2, say; not conclusive
    socket.once('connect', () => {
      connected = true;
      socket.write(
        encodeRequest(
          { apiKey: METADATA, apiVersion: METADATA_VERSION, correlationId: 1, clientId: 'gregor-advertised-check' },
          { topics: [] },
          { sizePrefix: true },
        ),
      );
    });
    socket.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      if (buf.length < 4 || buf.length < 4 + buf.readInt32BE(0)) return;
      try {
        const res = decodeResponse(METADATA, METADATA_VERSION, buf.subarray(4, 4 + buf.readInt32BE(0))).body as {
          clusterId?: string | null;
        };
        const other = res.clusterId ?? null;
        done(other === clusterId ? null : { problem: 'other-broker', detail: `cluster id ${other ?? '(none)'}, not ${clusterId}` });
      } catch {
        done(null);
      }
    });
  });
}

const ADVICE: Record<AdvertisedProblem['problem'], string> = {
  unresolved: 'does not resolve',
  unreachable: 'does not accept connections',
  'other-broker': 'is answered by another broker',
};

/** Probes every advertised listener that differs from its bound address; one warning per problem. */
export async function checkAdvertisedListeners(
  pairs: readonly AdvertisedPair[],
  opts: { clusterId: string; logger: Logger; signal?: AbortSignal; timeoutMs?: number },
): Promise<AdvertisedProblem[]> {
  const todo = pairs.filter((p) => p.advertised.host !== p.bound.host || p.advertised.port !== p.bound.port);
  const problems = await Promise.all(
    todo.map(async (p) => {
      const r = await probeAdvertised(p.advertised, opts.clusterId, opts.timeoutMs ?? 3000, opts.signal);
      const advertised = `${p.advertised.host}:${p.advertised.port}`;
      if (opts.signal?.aborted === true) return null;
      if (r === null) {
        opts.logger.debug({ listener: p.bound.name, advertised }, 'advertised listener answers (or cannot be told apart)');
        return null;
      }
      const problem: AdvertisedProblem = { listener: p.bound.name, advertised, ...r };
      opts.logger.warn(
        { ...problem, bound: `${p.bound.host}:${p.bound.port}` },
        `advertised listener ${p.bound.name} ${advertised} ${ADVICE[r.problem]} (${r.detail}): clients that bootstrap here are sent to it and will fail; set advertised.listeners to an address clients can reach`,
      );
      return problem;
    }),
  );
  return problems.filter((p) => p !== null);
}
