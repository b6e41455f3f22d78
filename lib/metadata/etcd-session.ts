/**
 * The broker's etcd session: a lease kept alive by the client, and the registration key
 * brokers/<nodeId> under it. When the lease is lost (etcd unreachable for longer than its TTL, or the
 * registration deleted under us) the session grants a new lease and registers again as soon as etcd
 * answers; the new registration has a new create revision, hence a new brokerEpoch.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { EtcdLeaseInvalidError, type Etcd3, type Lease } from 'etcd3';
import type { Logger } from 'pino';
import type { Controller } from '../cluster/controller.js';
import { createdAt, del, get, leaseIs, put, revisionOf, toKeyValue } from './etcd-ops.js';
import type { BrokerRegistration, EtcdKeys, EtcdState } from './etcd-state.js';
import { writeFileAtomic } from './local-file.js';
import { GregorMetadataErrorCode, MetadataError, type MetadataChange } from './store.js';

export interface SessionHost {
  readonly nodeId: number;
  readonly keys: EtcdKeys;
  readonly state: EtcdState;
  readonly logger: Logger;
  readonly client: Etcd3;
  readonly controller: Controller | undefined;
  caughtUp(revision: number): Promise<void>;
  isClosed(): boolean;
}

const RETRY_MS = 500;
/** The data dir's record of the lease this broker last held: a restart within the TTL replaces its own registration. */
export const LEASE_FILE = 'etcd-lease';

export class EtcdSession {
  private lease: Lease | undefined;
  private leaseId: string | undefined;
  /** Leases this session held before; a registration still under one is ours to replace. */
  private readonly pastLeases = new Set<string>();
  private registration: BrokerRegistration | undefined;
  private recovering: Promise<void> | undefined;
  /** Create revision of our registration key (our brokerEpoch); 0 when not registered. */
  private epoch = 0;

  constructor(
    private readonly host: SessionHost,
    readonly ttlSeconds: number,
    /** The data dir, where the lease held is recorded (none: not recorded). */
    private readonly dataDir?: string,
  ) {}

  /**
   * Reads the lease this data dir's broker held before (a crash leaves its registration alive until
   * the TTL passes): registering replaces that registration at once instead of waiting for it to expire,
   * as Kafka lets a restarted broker re-register with a new epoch. Two live brokers never share a data dir.
   */
  async adoptPredecessor(): Promise<void> {
    if (this.dataDir === undefined) return;
    const text = await readFile(join(this.dataDir, LEASE_FILE), 'utf8').catch(() => '');
    const id = text.trim();
    if (/^\d+$/.test(id)) this.pastLeases.add(id);
  }

  /** The live lease's id, undefined while the session has none (lost, not granted yet, closed). */
  leaseOf(): string | undefined {
    return this.leaseId;
  }

  /** The brokerEpoch of the current registration, 0 while not registered. */
  brokerEpoch(): number {
    return this.epoch;
  }

  async register(reg: BrokerRegistration): Promise<void> {
    this.registration = reg;
    try {
      if (this.leaseId === undefined) await this.grant();
      await this.registerOnce();
    } catch (e) {
      if (e instanceof MetadataError) throw e;
      throw new MetadataError(
        GregorMetadataErrorCode.ETCD,
        this.host.keys.broker(reg.nodeId),
        `registration failed: ${(e as Error).message}`,
        {
          cause: e,
        },
      );
    }
  }

  /** A key is about to be deleted from the copy: our registration going means the session is gone. */
  beforeDelete(key: string): void {
    if (key !== this.host.keys.broker(this.host.nodeId) || this.epoch === 0) return;
    const mine = this.host.state.brokers.get(this.host.nodeId);
    if (mine !== undefined && mine.lease === this.leaseId && this.lease !== undefined) {
      this.lost(this.lease, 'registration deleted');
    }
  }

  onChange(_change: MetadataChange): void {
    // nothing yet: the registration's deletion is handled before it is applied (beforeDelete)
  }

  async close(): Promise<void> {
    const lease = this.lease;
    this.lease = undefined;
    this.leaseId = undefined;
    this.epoch = 0;
    // bounded: with etcd away the lease simply expires
    if (lease !== undefined) await lease.revoke({ deadline: Date.now() + 2000 }).catch(() => undefined);
  }

  private async grant(): Promise<void> {
    const lease = this.host.client.lease(this.ttlSeconds);
    lease.on('lost', (err) => this.lost(lease, err.message));
    const id = await lease.grant();
    if (this.host.isClosed()) {
      await lease.revoke().catch(() => undefined);
      throw new Error('metadata store closed');
    }
    this.lease = lease;
    this.leaseId = id;
    if (this.dataDir !== undefined) await writeFileAtomic(this.dataDir, LEASE_FILE, `${id}\n`);
  }

  /** Puts brokers/<nodeId> if absent (or under one of our past leases); refuses another broker's. */
  private async registerOnce(): Promise<void> {
    const reg = this.registration;
    const leaseId = this.leaseId;
    if (reg === undefined || leaseId === undefined) return;
    const key = this.host.keys.broker(reg.nodeId);
    for (let attempt = 0; attempt < 5; attempt++) {
      const res = await this.host.client.kv.txn({
        compare: [createdAt(key, 0)],
        success: [put(key, JSON.stringify(reg), leaseId)],
        failure: [get(key)],
      });
      if (res.succeeded) {
        this.epoch = revisionOf(res);
        await this.host.caughtUp(this.epoch);
        return;
      }
      const raw = res.responses[0]?.response_range.kvs[0];
      if (raw === undefined) continue; // deleted in between
      const kv = toKeyValue(raw);
      if (kv.lease === leaseId) {
        // an earlier attempt of ours committed without us hearing back
        this.epoch = kv.createRevision;
        await this.host.caughtUp(kv.modRevision);
        return;
      }
      if (this.pastLeases.has(kv.lease)) {
        // a registration of ours from before (a lost session, or this data dir's broker before a
        // restart): revoking its lease drops it and whatever else it held (a controllership) at once
        await this.host.client.leaseClient.leaseRevoke({ ID: kv.lease }).catch((e: unknown) => {
          if (!(e instanceof EtcdLeaseInvalidError)) throw e;
        });
        await this.host.client.kv.txn({ compare: [leaseIs(key, kv.lease)], success: [del(key)] });
        this.host.logger.info({ nodeId: reg.nodeId, lease: kv.lease }, 'replaced the registration of this broker before its restart');
        this.pastLeases.delete(kv.lease);
        continue;
      }
      const ttl = await this.host.client.leaseClient.leaseTimeToLive({ ID: kv.lease }).then(
        (r) => `${r.TTL} s`,
        () => 'unknown',
      );
      throw new MetadataError(
        GregorMetadataErrorCode.NODE_ID_IN_USE,
        key,
        `node.id ${reg.nodeId} is registered by another live broker (its session expires in ${ttl} unless renewed)`,
      );
    }
    throw new Error(`registration of node ${reg.nodeId} kept conflicting`);
  }

  private lost(lease: Lease, why: string): void {
    if (lease !== this.lease || this.host.isClosed()) return;
    const id = this.leaseId;
    if (id !== undefined) this.pastLeases.add(id);
    this.lease = undefined;
    this.leaseId = undefined;
    this.epoch = 0;
    lease.release();
    this.host.logger.warn({ nodeId: this.host.nodeId, lease: id, why }, 'etcd session lost; registering again when etcd answers');
    this.host.controller?.sessionLost();
    this.recovering ??= this.recover().finally(() => (this.recovering = undefined));
  }

  private async recover(): Promise<void> {
    for (let attempt = 0; !this.host.isClosed(); attempt++) {
      try {
        for (const old of this.pastLeases) {
          // revoking drops whatever the old lease still holds (registration, controllership) at once
          await this.host.client.leaseClient.leaseRevoke({ ID: old }).catch((e: unknown) => {
            if (!(e instanceof EtcdLeaseInvalidError)) throw e;
          });
          this.pastLeases.delete(old);
        }
        await this.grant();
        if (this.registration !== undefined) await this.registerOnce();
        this.host.logger.info({ nodeId: this.host.nodeId, brokerEpoch: this.epoch, lease: this.leaseId }, 'etcd session restored');
        if (this.registration !== undefined) this.host.controller?.start();
        return;
      } catch (e) {
        if (this.lease !== undefined) {
          const lease = this.lease;
          this.lease = undefined;
          this.leaseId = undefined;
          await lease.revoke().catch(() => undefined);
        }
        if (e instanceof MetadataError || attempt % 20 === 0) {
          this.host.logger.warn({ err: (e as Error).message }, 'etcd session not restored yet; retrying');
        }
        await new Promise((r) => setTimeout(r, RETRY_MS));
      }
    }
  }
}
