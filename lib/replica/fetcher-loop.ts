/**
 * The connection and loop under a replica fetcher: one connection to the leader (made on demand, to
 * the address the leader has then), a loop that runs the fetcher's rounds one at a time, closes the
 * connection and waits `backoffMs` after a failed round, and sleeps that end early on close (and,
 * when idle, on new work).
 */
import type { BrokerAddress } from '../client/address.js';
import { formatAddress } from '../client/address.js';
import { BrokerConnection } from '../client/connection.js';
import { ClientError, ClientErrorCode } from '../client/errors.js';
import { packageVersion } from '../cli/context.js';
import type { Logger } from '../observability/logger.js';

export interface ReplicaFetcherSettings {
  /** This broker's node id (the Fetch's replica id). */
  replicaId: number;
  /** e.g. `gregor-replica-fetcher-<nodeId>` */
  clientId: string;
  /** replica.fetch.wait.max.ms (Kafka 500) */
  maxWaitMs: number;
  /** replica.fetch.min.bytes (1) */
  minBytes: number;
  /** replica.fetch.response.max.bytes (10 MiB) */
  maxBytes: number;
  /** replica.fetch.max.bytes (1 MiB) */
  partitionMaxBytes: number;
  /** replica.fetch.backoff.ms (1000) */
  backoffMs: number;
  /** replica.socket.timeout.ms (30000): connect and request timeout; must exceed maxWaitMs */
  requestTimeoutMs: number;
  logger: Logger;
}

export abstract class FetcherLoop {
  protected closed = false;
  protected readonly logger: Logger;
  private conn: BrokerConnection | null = null;
  private loop: Promise<void> = Promise.resolve();
  private wakeUp: (() => void) | null = null;
  /** whether the current sleep ends early on new work (not a backoff after a failure) */
  private sleepingIdle = false;
  /** failed rounds in a row (the first is logged as a warning, the rest at debug) */
  private failures = 0;

  constructor(
    readonly leaderId: number,
    private readonly leaderAddress: () => BrokerAddress | undefined,
    protected readonly settings: ReplicaFetcherSettings,
  ) {
    this.logger = settings.logger.child({ replicaFetcher: leaderId });
  }

  /** One round with the connection to the leader (a ClientError closes it and backs off). */
  protected abstract step(): Promise<void>;

  /** Starts the loop (by the subclass, once its fields are set). */
  protected start(): void {
    this.loop = this.run();
  }

  /** Stops the loop; resolves once the round in progress ended. */
  async close(): Promise<void> {
    this.closed = true;
    this.conn?.close();
    this.wakeUp?.();
    await this.loop;
    this.conn?.close();
    this.conn = null;
  }

  /** Ends an idle sleep early (new work). */
  protected wakeIfIdle(): void {
    if (this.sleepingIdle) this.wakeUp?.();
  }

  /** Waits `ms` (null: until woken), or until close (or, when `idle`, until wakeIfIdle). */
  protected sleep(ms: number | null, idle: boolean): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        if (timer !== null) clearTimeout(timer);
        if (this.wakeUp === done) {
          this.wakeUp = null;
          this.sleepingIdle = false;
        }
        resolve();
      };
      const timer = ms === null ? null : setTimeout(done, Math.max(0, ms));
      this.wakeUp = done;
      this.sleepingIdle = idle;
    });
  }

  private async run(): Promise<void> {
    while (!this.closed) {
      try {
        await this.step();
      } catch (e) {
        // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- close() may have run during the await
        if (this.closed) break;
        this.conn?.close();
        this.conn = null;
        this.failures++;
        const err = e instanceof ClientError ? e.message : e;
        if (this.failures === 1)
          this.logger.warn({ err, leader: this.leaderId }, 'replica fetcher: request to the leader failed; retrying');
        else this.logger.debug({ err, leader: this.leaderId, failures: this.failures }, 'replica fetcher: request to the leader failed');
        await this.sleep(this.settings.backoffMs, false);
      }
    }
  }

  /** The connection to the leader, made now if there is none (to the address it has now). */
  protected async connection(): Promise<BrokerConnection> {
    if (this.conn !== null && !this.conn.closed) return this.conn;
    this.conn = null;
    const address = this.leaderAddress();
    if (address === undefined) {
      throw new ClientError(ClientErrorCode.NOT_FOUND, `broker ${this.leaderId} has no known address`, {
        broker: `broker ${this.leaderId}`,
      });
    }
    const s = this.settings;
    const conn = await BrokerConnection.open(address, `broker ${this.leaderId} (${formatAddress(address)})`, {
      clientId: s.clientId,
      connectTimeoutMs: s.requestTimeoutMs,
      requestTimeoutMs: s.requestTimeoutMs,
      softwareName: 'gregor-replica-fetcher',
      softwareVersion: packageVersion(),
    });
    if (this.closed) {
      conn.close();
      throw new ClientError(ClientErrorCode.DISCONNECTED, 'replica fetcher closed');
    }
    if (this.failures > 0)
      this.logger.info({ leader: this.leaderId, failures: this.failures }, 'replica fetcher: connected to the leader again');
    this.failures = 0;
    this.conn = conn;
    return conn;
  }
}
