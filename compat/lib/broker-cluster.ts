/**
 * The suite's multi-broker target (`npm run compat -- --cluster N`): a real etcd and N `gregor start`
 * processes in etcd mode (lib/cluster/local-cluster.ts), configured as a Kafka user configures a test
 * cluster of that size, plus the suite's group timings (SUITE_BROKER_OVERRIDES).
 */
import { execFileSync } from 'node:child_process';
import { findEtcdBinary } from '../../lib/cluster/etcd-server.js';
import { type LocalCluster, startLocalCluster } from '../../lib/cluster/local-cluster.js';
import { SUITE_BROKER_OVERRIDES } from './broker-process.js';

/**
 * Broker config for an N-broker suite cluster: every topic, `__consumer_offsets` and
 * `__transaction_state` replicated min(3, N) times; from 3 brokers on, writes with acks=all need 2
 * in-sync replicas (min.insync.replicas, transaction.state.log.min.isr), so one broker may be lost
 * without losing an acknowledged write; unclean leader election stays off (Kafka's default, stated).
 */
export function clusterOverrides(brokers: number): Record<string, string> {
  const rf = String(Math.min(3, brokers));
  const minIsr = brokers >= 3 ? '2' : '1';
  return {
    ...SUITE_BROKER_OVERRIDES,
    'default.replication.factor': rf,
    'offsets.topic.replication.factor': rf,
    'transaction.state.log.replication.factor': rf,
    'transaction.state.log.min.isr': minIsr,
    'min.insync.replicas': minIsr,
    'unclean.leader.election.enable': 'false',
  };
}

export interface SuiteCluster {
  cluster: LocalCluster;
  /** every broker's host:port, comma-separated */
  bootstrap: string;
  overrides: Record<string, string>;
  /** `etcd --version`'s first line, or "unknown" */
  etcdVersion: string;
  stop(): Promise<void>;
}

/** Starts etcd and `brokers` gregor brokers (node ids 1..N); `dir` keeps etcd's data, the brokers' data and logs. */
export async function startSuiteCluster(brokers: number, dir?: string): Promise<SuiteCluster> {
  const overrides = clusterOverrides(brokers);
  const cluster = await startLocalCluster({ brokers, overrides, ...(dir !== undefined ? { dir } : {}) });
  return { cluster, bootstrap: cluster.bootstrap(), overrides, etcdVersion: etcdVersion(), stop: () => cluster.stop() };
}

function etcdVersion(): string {
  try {
    const out = execFileSync(findEtcdBinary(), ['--version'], { encoding: 'utf8' });
    return out.split('\n')[0]?.replace(/^etcd Version:\s*/, 'etcd ') ?? 'unknown';
  } catch {
    return 'unknown';
  }
}
