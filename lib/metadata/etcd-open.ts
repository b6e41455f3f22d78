/**
 * Opening the etcd metadata store: the client's options, the data dir's identity check, and the
 * first read of every key of the cluster.
 */
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Etcd3, IOptions } from 'etcd3';
import type { Logger } from 'pino';
import { prefixEnd, toKeyValue } from './etcd-ops.js';
import { BadValueError, type EtcdState } from './etcd-state.js';
import { writeFileAtomic } from './local-file.js';
import { GregorMetadataErrorCode, MetadataError } from './store.js';

/** Written in the data dir on first open; a data dir of another cluster or node id is refused. */
const IDENTITY_FILE = 'gregor-cluster.json';
/** Range reads at open fetch this many keys per page. */
const PAGE = 1000;
/** Unary etcd calls give up after this long (streams have no deadline). */
const CALL_TIMEOUT_MS = 5000;

/** The etcd3 client's options: our own retries and deadlines instead of its circuit breaker. */
export function clientOptions(endpoints: string[]): IOptions {
  // No circuit breaker: the store retries on its own, and must see etcd again as soon as it answers.
  const passThrough = {
    execute: (fn: (ctx: { signal: AbortSignal }) => unknown) => Promise.resolve().then(() => fn({ signal: new AbortController().signal })),
  };
  type HostPolicy = ReturnType<NonNullable<NonNullable<IOptions['faultHandling']>['host']>>;
  const backoff = (ms: number): { duration: number; next: () => unknown } => ({
    duration: ms,
    next: () => backoff(Math.min(1000, ms * 2 + 100)),
  });
  return {
    hosts: endpoints,
    defaultCallOptions: (ctx) => (ctx.isStream ? {} : { deadline: Date.now() + CALL_TIMEOUT_MS }),
    faultHandling: {
      host: () => passThrough as unknown as HostPolicy,
      watchBackoff: backoff(0) as unknown as NonNullable<NonNullable<IOptions['faultHandling']>['watchBackoff']>,
    },
    grpcOptions: { 'grpc.initial_reconnect_backoff_ms': 100, 'grpc.max_reconnect_backoff_ms': 1000 },
  };
}

/** Reads every key of the cluster at one revision, page by page, into `state`. */
export async function load(client: Etcd3, state: EtcdState, logger: Logger): Promise<void> {
  const end = prefixEnd(state.keys.prefix);
  let from = Buffer.from(state.keys.prefix);
  let revision: number | undefined;
  for (;;) {
    const res = await client.kv.range({ key: from, range_end: end, limit: PAGE, ...(revision !== undefined ? { revision } : {}) });
    revision ??= Number(res.header.revision);
    for (const raw of res.kvs) {
      const kv = toKeyValue(raw);
      try {
        state.apply(kv, false);
      } catch (e) {
        if (!(e instanceof BadValueError)) throw e;
        logger.error({ key: kv.key, err: e.message }, 'etcd metadata value skipped');
      }
    }
    const last = res.kvs[res.kvs.length - 1];
    if (!res.more || last === undefined) break;
    from = Buffer.concat([last.key, Buffer.from([0])]);
  }
  state.revision = revision;
}

/** Refuses a data dir that belongs to another cluster or node id; marks a new one as this node's. */
export async function checkIdentity(dataDir: string, clusterId: string, nodeId: number): Promise<void> {
  const file = join(dataDir, IDENTITY_FILE);
  let text: string | undefined;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  if (text !== undefined) {
    let found: { clusterId?: unknown; nodeId?: unknown };
    try {
      found = JSON.parse(text) as typeof found;
    } catch {
      throw new MetadataError(GregorMetadataErrorCode.CORRUPT, file, `${file} is not JSON`);
    }
    if (found.clusterId !== clusterId || found.nodeId !== nodeId) {
      throw new MetadataError(
        GregorMetadataErrorCode.CLUSTER_ID,
        file,
        `data dir ${dataDir} belongs to cluster ${String(found.clusterId)} node ${String(found.nodeId)}, not cluster ${clusterId} node ${nodeId}`,
      );
    }
    return;
  }
  await mkdir(dataDir, { recursive: true });
  await writeFileAtomic(dataDir, IDENTITY_FILE, `${JSON.stringify({ version: 1, clusterId, nodeId })}\n`);
}
