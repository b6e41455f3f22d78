/**
 * The broker's shutdown sequence: not ready, leadership handed over (clusters), listeners closed with
 * in-flight requests let finish, then the metadata written, the logs flushed and the clean-shutdown
 * marker written, and last the metadata store closed.
 */
import type { AdminServer } from '../admin/server.js';
import type { AppendPool } from '../append/pool.js';
import type { LogCleaner } from '../log/cleaner/cleaner.js';
import type { LogManager } from '../log/log-dirs.js';
import type { MetadataStore } from '../metadata/store.js';
import type { FaultInjector } from '../network/faults.js';
import type { KafkaServer } from '../network/server.js';
import type { BrokerMetrics } from '../observability/broker-metrics.js';
import type { Logger } from '../observability/logger.js';
import type { Readiness } from '../observability/readiness.js';
import type { Replication } from '../replica/replication.js';
import type { BrokerServices } from '../services.js';

/**
 * What shutdown stops. The broker's parts are read as each step comes (stop() may run while start()
 * is still making them, or before start() got as far as them: a failed start cleans up through it).
 */
export interface ShutdownParts {
  readonly background: AbortController;
  readonly metrics: BrokerMetrics;
  readonly readiness: Readiness;
  readonly faults: FaultInjector;
  readonly logger: Logger;
  readonly servers: readonly { server: KafkaServer }[];
  readonly parts: () => {
    replication: Replication | undefined;
    admin: AdminServer | null;
    services: BrokerServices | undefined;
    metadata: MetadataStore | undefined;
    logManager: LogManager | undefined;
    cleaner: LogCleaner | null;
    appendPool: AppendPool | null;
  };
}

/** Stops accepting, lets in-flight requests finish, flushes the logs and writes the clean-shutdown marker. */
export async function shutdown(b: ShutdownParts): Promise<void> {
  b.background.abort();
  b.metrics.history.stop();
  b.readiness.hold('shutdown'); // not ready from here on
  // clusters: hand leadership to the other in-sync replicas first (Kafka's controlled shutdown)
  const { replication, metadata: leading } = b.parts();
  if (replication !== undefined) {
    await leading?.resignLeadership().catch((err: unknown) => b.logger.warn({ err }, 'controlled shutdown could not move leadership'));
  }
  b.faults.clear(); // paused appends go ahead and no injected delay holds a connection open
  const adminClosed = b.parts().admin?.close();
  const { services, metadata, logManager } = b.parts();
  services?.groups.shutdown();
  services?.share.shutdown();
  services?.txn.shutdown();
  services?.purgatory.expireAll();
  await Promise.all(b.servers.map((s) => s.server.close(10_000)));
  // one node: a first FindCoordinator answered before __consumer_offsets was made (it is made meanwhile)
  await services?.groups.offsetsTopicSettled();
  // no follower appends once the logs are being closed
  await b.parts().replication?.stop();
  await adminClosed;
  services?.purgatory.expireAll();
  // a step that fails (a full disk fails the metadata write, flushes and checkpoints) is logged
  // and the others still run: the broker stops, and the next start recovers what was not written
  const failed: string[] = [];
  const step = (what: string, p: Promise<void> | undefined): Promise<void> =>
    (p ?? Promise.resolve()).catch((err: unknown) => {
      failed.push(what);
      b.logger.error({ err }, `shutdown: ${what} failed; continuing`);
    });
  await step('writing the metadata', metadata?.persisted());
  await step('stopping the log cleaner', b.parts().cleaner?.stop());
  await step('closing the logs', logManager?.shutdown());
  // last: a cluster's registration (and any controllership) go once the logs are flushed
  await step('closing the metadata store', metadata?.close());
  await b.parts().appendPool?.stop();
  if (failed.length > 0) b.logger.warn({ failed }, 'gregor stopped with failures; the next start recovers the logs');
  else b.logger.info('gregor stopped');
  b.logger.flush();
}
