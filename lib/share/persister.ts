/**
 * How a partition leader reads and writes its share partitions' state (Kafka's Persister): through the
 * share coordinator of each share partition's key, the leader of its `__share_group_state` partition.
 * When that is this broker (always on one node) the call is in-process; otherwise it is a
 * ReadShareGroupState / WriteShareGroupState / DeleteShareGroupState request to that broker. While the
 * coordinator moves (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS, a lost
 * connection) the call is retried with a backoff until `timeoutMs` has passed, so an acknowledgement
 * waits for the new coordinator rather than being answered unwritten.
 */
import type { Logger } from 'pino';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { DeleteShareGroupStateResponse } from '../../protocol/generated/delete-share-group-state.js';
import type { InitializeShareGroupStateResponse } from '../../protocol/generated/initialize-share-group-state.js';
import type { ReadShareGroupStateSummaryResponse } from '../../protocol/generated/read-share-group-state-summary.js';
import type { ReadShareGroupStateResponse } from '../../protocol/generated/read-share-group-state.js';
import type { WriteShareGroupStateResponse } from '../../protocol/generated/write-share-group-state.js';
import type { BrokerChannels } from '../txn/inter-broker.js';
import type { PersistedRecordState } from './share-partition.js';
import {
  type PersistedShareState,
  type ShareStateCoordinator,
  shareStateKey,
  type ShareStateSummary,
  type ShareStateWrite,
} from './state-coordinator.js';

export interface SharePersister {
  read(
    groupId: string,
    topicId: string,
    partition: number,
    leaderEpoch: number,
  ): Promise<{ errorCode: number; state: PersistedShareState }>;
  write(groupId: string, topicId: string, partition: number, w: ShareStateWrite): Promise<number>;
  delete(groupId: string, topicId: string, partition: number): Promise<number>;
  /** ReadShareGroupStateSummary (the admin's read): state epoch and start offset, -1 when never written. */
  readSummary(groupId: string, topicId: string, partition: number): Promise<{ errorCode: number; summary: ShareStateSummary }>;
  /** InitializeShareGroupState (alter/reset): a new start offset under a new state epoch, nothing in flight. */
  initialize(groupId: string, topicId: string, partition: number, stateEpoch: number, startOffset: bigint): Promise<number>;
}

export interface PersisterDeps {
  nodeId: number;
  coordinator: ShareStateCoordinator;
  /** The broker leading state partition `p` (-1 when none); one node: this one. */
  coordinatorOf(statePartition: number): number;
  /** Clusters: connections to the other brokers. */
  channels?: BrokerChannels;
  /** How long a call keeps retrying while the coordinator moves. */
  timeoutMs: number;
  logger: Logger;
}

const RETRIABLE = new Set<number>([
  ErrorCode.NOT_COORDINATOR,
  ErrorCode.COORDINATOR_NOT_AVAILABLE,
  ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
  ErrorCode.REQUEST_TIMED_OUT,
]);

const NO_STATE: PersistedShareState = { stateEpoch: 0, leaderEpoch: -1, startOffset: -1n, batches: [] };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A state batch as the share-state APIs carry it. */
export interface WireStateBatch {
  firstOffset: bigint;
  lastOffset: bigint;
  deliveryState: number;
  deliveryCount: number;
}

export const toWireBatches = (batches: readonly PersistedRecordState[]): WireStateBatch[] =>
  batches.map((b) => ({ firstOffset: b.firstOffset, lastOffset: b.lastOffset, deliveryState: b.state, deliveryCount: b.deliveryCount }));

export const fromWireBatches = (batches: readonly WireStateBatch[]): PersistedRecordState[] =>
  batches.map((b) => ({ firstOffset: b.firstOffset, lastOffset: b.lastOffset, state: b.deliveryState, deliveryCount: b.deliveryCount }));

/** The one partition of a share-state response (`results[0].partitions[0]`), or undefined. */
function only<P>(results: readonly { partitions: readonly P[] }[]): P | undefined {
  return results[0]?.partitions[0];
}

export class RoutingPersister implements SharePersister {
  constructor(private readonly d: PersisterDeps) {}

  async read(groupId: string, topicId: string, partition: number, leaderEpoch: number) {
    let state = NO_STATE;
    const errorCode = await this.route(
      shareStateKey(groupId, topicId, partition),
      () => {
        const r = this.d.coordinator.read(groupId, topicId, partition, leaderEpoch);
        state = r.state;
        return Promise.resolve(r.errorCode);
      },
      async (node) => {
        const res = await this.request<ReadShareGroupStateResponse>(node, ApiKey.ReadShareGroupState, {
          groupId,
          topics: [{ topicId, partitions: [{ partition, leaderEpoch }] }],
        });
        const p = only(res.results);
        if (p === undefined) return ErrorCode.UNKNOWN_SERVER_ERROR;
        state = {
          stateEpoch: p.stateEpoch,
          leaderEpoch,
          startOffset: p.startOffset,
          batches: fromWireBatches(p.stateBatches),
        };
        return p.errorCode;
      },
    );
    return { errorCode, state };
  }

  write(groupId: string, topicId: string, partition: number, w: ShareStateWrite): Promise<number> {
    return this.route(
      shareStateKey(groupId, topicId, partition),
      () => this.d.coordinator.write(groupId, topicId, partition, w),
      async (node) => {
        const res = await this.request<WriteShareGroupStateResponse>(node, ApiKey.WriteShareGroupState, {
          groupId,
          topics: [
            {
              topicId,
              partitions: [
                {
                  partition,
                  stateEpoch: w.stateEpoch,
                  leaderEpoch: w.leaderEpoch,
                  startOffset: w.startOffset,
                  stateBatches: toWireBatches(w.batches),
                },
              ],
            },
          ],
        });
        return only(res.results)?.errorCode ?? ErrorCode.UNKNOWN_SERVER_ERROR;
      },
    );
  }

  delete(groupId: string, topicId: string, partition: number): Promise<number> {
    return this.route(
      shareStateKey(groupId, topicId, partition),
      () => this.d.coordinator.delete(groupId, topicId, partition),
      async (node) => {
        const res = await this.request<DeleteShareGroupStateResponse>(node, ApiKey.DeleteShareGroupState, {
          groupId,
          topics: [{ topicId, partitions: [{ partition }] }],
        });
        return only(res.results)?.errorCode ?? ErrorCode.UNKNOWN_SERVER_ERROR;
      },
    );
  }

  async readSummary(groupId: string, topicId: string, partition: number) {
    let summary: ShareStateSummary = { stateEpoch: 0, leaderEpoch: -1, startOffset: -1n };
    const errorCode = await this.route(
      shareStateKey(groupId, topicId, partition),
      () => {
        const r = this.d.coordinator.readSummary(groupId, topicId, partition);
        summary = r.summary;
        return Promise.resolve(r.errorCode);
      },
      async (node) => {
        const res = await this.request<ReadShareGroupStateSummaryResponse>(node, ApiKey.ReadShareGroupStateSummary, {
          groupId,
          topics: [{ topicId, partitions: [{ partition, leaderEpoch: -1 }] }],
        });
        const p = only(res.results);
        if (p === undefined) return ErrorCode.UNKNOWN_SERVER_ERROR;
        summary = { stateEpoch: p.stateEpoch, leaderEpoch: -1, startOffset: p.startOffset };
        return p.errorCode;
      },
    );
    return { errorCode, summary };
  }

  initialize(groupId: string, topicId: string, partition: number, stateEpoch: number, startOffset: bigint): Promise<number> {
    return this.route(
      shareStateKey(groupId, topicId, partition),
      () => this.d.coordinator.initialize(groupId, topicId, partition, stateEpoch, startOffset),
      async (node) => {
        const res = await this.request<InitializeShareGroupStateResponse>(node, ApiKey.InitializeShareGroupState, {
          groupId,
          topics: [{ topicId, partitions: [{ partition, stateEpoch, startOffset }] }],
        });
        return only(res.results)?.errorCode ?? ErrorCode.UNKNOWN_SERVER_ERROR;
      },
    );
  }

  private request<T>(node: number, apiKey: number, body: unknown): Promise<T> {
    const channels = this.d.channels;
    if (channels === undefined) return Promise.reject(new Error('no inter-broker channels'));
    return channels.request<T>(node, apiKey, () => body);
  }

  /** Runs the call where the key's coordinator is, again while it moves; the last error code otherwise. */
  private async route(key: string, local: () => Promise<number>, remote: (node: number) => Promise<number>): Promise<number> {
    const deadline = Date.now() + this.d.timeoutMs;
    for (let backoff = 50; ; backoff = Math.min(backoff * 2, 1000)) {
      let errorCode = await this.d.coordinator.ensureReady();
      if (errorCode === ErrorCode.NONE) {
        const node = this.d.coordinatorOf(this.d.coordinator.partitionFor(key));
        if (node === this.d.nodeId) errorCode = await local();
        else if (node < 0) errorCode = ErrorCode.COORDINATOR_NOT_AVAILABLE;
        else {
          try {
            errorCode = await remote(node);
          } catch (err) {
            this.d.logger.debug({ err, node }, 'share coordinator unreachable');
            errorCode = ErrorCode.COORDINATOR_NOT_AVAILABLE;
          }
        }
      }
      if (!RETRIABLE.has(errorCode) || Date.now() + backoff > deadline) return errorCode;
      await sleep(backoff);
    }
  }
}
