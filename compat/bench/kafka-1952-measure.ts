/**
 * kafka-1952.ts's measurements of the brokers: CPU windows (each broker's process and main thread,
 * etcd, this process) and the Fetch local times of a window from the brokers' request log (replica
 * fetchers apart from consumers), with /metrics' FetchFollower LocalTimeMs beside them.
 */
import type { LocalBroker, LocalCluster } from '../../lib/cluster/local-cluster.js';
import { adminRequest } from './admin-http.js';
import { cpuSeconds, mainThreadCpuSeconds, mean, percentile, round, rssBytes, threadCpu } from './proc-stats.js';

const REPLICA_CLIENT = 'gregor-replica-fetcher-';

const r3 = (x: number): number => round(x, 3);

function admin(b: LocalBroker, method: string, p: string, body?: unknown): Promise<unknown> {
  if (b.admin === null) throw new Error(`broker ${b.nodeId} has no admin listener`);
  return adminRequest(b.admin, method, p, body);
}

interface LoggedRequest {
  clientId: string | null;
  responseBytes: number;
  latencyMs: { total: number; local: number; remote: number };
}

export async function startRecording(brokers: readonly LocalBroker[]): Promise<void> {
  await Promise.all(brokers.map((b) => admin(b, 'POST', '/v1/requests/record-all', { on: true })));
}

export interface FetchTimes {
  broker: number;
  replicaFetches: number;
  replicaLocalP50Ms: number;
  replicaLocalP99Ms: number;
  replicaLocalMaxMs: number;
  replicaLocalAvgMs: number;
  replicaTotalP50Ms: number;
  /** a replica fetch's response size, median (bytes) */
  replicaResponseBytesP50: number;
  consumerFetches: number;
  consumerLocalP50Ms: number;
  consumerLocalP99Ms: number;
  dropped: number;
}

/** Stops the recording and returns the Fetch local times it holds, replica fetches apart from consumers'. */
export async function stopRecording(brokers: readonly LocalBroker[]): Promise<{ per: FetchTimes[]; replicaLocal: number[] }> {
  const per: FetchTimes[] = [];
  const replicaLocal: number[] = [];
  for (const b of brokers) {
    await admin(b, 'POST', '/v1/requests/record-all', { on: false });
    const r = (await admin(b, 'GET', '/v1/requests?api=Fetch')) as { recording: { dropped: number }; requests: LoggedRequest[] };
    await admin(b, 'DELETE', '/v1/requests');
    const rep = r.requests.filter((x) => (x.clientId ?? '').startsWith(REPLICA_CLIENT));
    const con = r.requests.filter((x) => !(x.clientId ?? '').startsWith(REPLICA_CLIENT));
    const local = rep.map((x) => x.latencyMs.local);
    replicaLocal.push(...local);
    per.push({
      broker: b.nodeId,
      replicaFetches: rep.length,
      replicaLocalP50Ms: r3(percentile(local, 50)),
      replicaLocalP99Ms: r3(percentile(local, 99)),
      replicaLocalMaxMs: r3(Math.max(...local)),
      replicaLocalAvgMs: r3(mean(local)),
      replicaTotalP50Ms: r3(
        percentile(
          rep.map((x) => x.latencyMs.total),
          50,
        ),
      ),
      replicaResponseBytesP50: percentile(
        rep.map((x) => x.responseBytes),
        50,
      ),
      consumerFetches: con.length,
      consumerLocalP50Ms: r3(
        percentile(
          con.map((x) => x.latencyMs.local),
          50,
        ),
      ),
      consumerLocalP99Ms: r3(
        percentile(
          con.map((x) => x.latencyMs.local),
          99,
        ),
      ),
      dropped: r.recording.dropped,
    });
  }
  return { per, replicaLocal };
}

/** kafka_network_requestmetrics_localtimems{request="FetchFollower"} quantiles (last five minutes) of each broker. */
export async function followerLocalTimeMetric(
  brokers: readonly LocalBroker[],
): Promise<{ broker: number; p50Ms: number; p99Ms: number }[]> {
  const out: { broker: number; p50Ms: number; p99Ms: number }[] = [];
  for (const b of brokers) {
    const text = String(await admin(b, 'GET', '/metrics'));
    const q = (label: string): number => {
      const m = new RegExp(`^kafka_network_requestmetrics_localtimems\\{request="FetchFollower",quantile="${label}"\\} (\\S+)$`, 'm').exec(
        text,
      );
      return m?.[1] === undefined ? NaN : r3(Number(m[1]));
    };
    out.push({ broker: b.nodeId, p50Ms: q('0.50'), p99Ms: q('0.99') });
  }
  return out;
}

// ---- CPU windows ------------------------------------------------------------------------------

export interface CpuReading {
  at: number;
  brokers: { total: number; main: number; threads: Map<string, number> }[];
  etcd: number;
  self: NodeJS.CpuUsage;
}

export function readCpu(cluster: LocalCluster): CpuReading {
  const etcdPid = cluster.etcd.pid;
  return {
    at: performance.now(),
    brokers: cluster.brokers.map((b) => ({
      total: cpuSeconds(b.pid ?? -1),
      main: mainThreadCpuSeconds(b.pid ?? -1),
      threads: threadGroups(b.pid ?? -1),
    })),
    etcd: etcdPid === undefined ? NaN : cpuSeconds(etcdPid),
    self: process.cpuUsage(),
  };
}

/**
 * CPU seconds by thread kind: the main thread ("main"), and the others by name with digits dropped
 * (V8's GC and compiler workers "V8 DefaultWorke", libuv's pool "libuv-worker", …). Threads that
 * ended between two readings drop out of the later one.
 */
function threadGroups(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const t of threadCpu(pid)) {
    const kind = t.tid === pid ? 'main' : t.comm.replace(/\d+/g, '').trim();
    out.set(kind, (out.get(kind) ?? 0) + t.cpuSeconds);
  }
  return out;
}

export interface CpuWindow {
  seconds: number;
  brokers: { broker: number; cpuPercent: number; mainThreadPercent: number; rssMb: number; threadsPercent: Record<string, number> }[];
  etcdPercent: number;
  /** this process: the librdkafka client(s) and the bench's own loop */
  clientPercent: number;
}

export function cpuWindow(cluster: LocalCluster, a: CpuReading, b: CpuReading): CpuWindow {
  const secs = (b.at - a.at) / 1000;
  const pct = (x: number): number => round((x / secs) * 100, 2);
  const self = (b.self.user + b.self.system - a.self.user - a.self.system) / 1e6;
  return {
    seconds: round(secs, 1),
    brokers: cluster.brokers.map((br, i) => ({
      broker: br.nodeId,
      cpuPercent: pct((b.brokers[i]?.total ?? NaN) - (a.brokers[i]?.total ?? NaN)),
      mainThreadPercent: pct((b.brokers[i]?.main ?? NaN) - (a.brokers[i]?.main ?? NaN)),
      threadsPercent: Object.fromEntries(
        [...(b.brokers[i]?.threads ?? new Map<string, number>())]
          .map(([kind, s]): [string, number] => [kind, pct(s - (a.brokers[i]?.threads.get(kind) ?? 0))])
          .filter(([, p]) => p > 0),
      ),
      rssMb: round(rssBytes(br.pid ?? -1) / (1 << 20), 1),
    })),
    etcdPercent: pct(b.etcd - a.etcd),
    clientPercent: pct(self),
  };
}
