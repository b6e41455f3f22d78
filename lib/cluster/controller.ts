/**
 * The controller: every broker runs one, each campaigns for the `controller` key, and only the one
 * holding it acts. Winning is one transaction: put `controller` (under the broker's lease) if absent
 * and bump `controller-epoch`. The winner's fence is that key's create revision and the epoch it
 * wrote; every controller write compares both, so a controller that lost the key without noticing
 * (an outage, a stale election result) cannot change anything.
 *
 * Duties here: leader election when brokers come and go (a partition whose leader is gone gets the
 * first live replica of its ISR, or no leader, keeping its last ISR, when none is live: no unclean
 * election), dead brokers leave ISRs, alterPartition for the leaders' ISR changes, completing
 * reassignments once their new replicas are in the ISR, and (auto.leader.rebalance.enable) handing
 * leadership back to preferred replicas. Changes made on request: lib/cluster/partition-admin.ts.
 */
import type { Etcd3 } from 'etcd3';
import type { Logger } from 'pino';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { createdAt, del, get, modifiedAt, put, rangedKeyValues, revisionOf, valueIs } from '../metadata/etcd-ops.js';
import type { EtcdKeys, EtcdState } from '../metadata/etcd-state.js';
import { MetadataWriteError, type MetadataChange, type PartitionState } from '../metadata/store.js';
import { completeReassignment, isReassigning, preferredElection, rebalanceCandidates, type PartitionView } from './partition-changes.js';

export interface ControllerHost {
  readonly nodeId: number;
  readonly keys: EtcdKeys;
  readonly state: EtcdState;
  readonly logger: Logger;
  readonly client: Etcd3;
  readonly session: { leaseOf(): string | undefined };
  caughtUp(revision: number): Promise<void>;
  isClosed(): boolean;
}

/**
 * Kafka's auto.leader.rebalance.enable, leader.imbalance.check.interval.seconds,
 * leader.imbalance.per.broker.percentage, and the broker's unclean.leader.election.enable (a topic's
 * own setting overrides it).
 */
export interface ControllerOptions {
  autoLeaderRebalance: boolean;
  imbalanceCheckIntervalMs: number;
  imbalancePercentage: number;
  uncleanLeaderElection?: boolean;
}

const DEFAULT_OPTIONS: ControllerOptions = { autoLeaderRebalance: true, imbalanceCheckIntervalMs: 300_000, imbalancePercentage: 10 };

const UNCLEAN_KEY = 'unclean.leader.election.enable';

/** What a controller's writes must match: the election key's create revision and the epoch it won. */
export interface ControllerFence {
  createRevision: number;
  epoch: number;
}

/** One partition's new state, written only if the partition key is still at `modRevision` (0: absent). */
export interface PartitionChange {
  topic: string;
  partition: number;
  modRevision: number;
  /** The topic key's create revision: the change is void if the topic was deleted (or recreated). */
  topicCreateRevision: number;
  state: PartitionState;
}

/** etcd refuses transactions of more than 128 operations (--max-txn-ops); we stay well below. */
const MAX_TXN_OPS = 100;
const RETRY_MS = 250;
/** How long closing waits for etcd to take the resignation (it expires with the lease anyway). */
const CLOSE_DEADLINE_MS = 2000;
/** Per-partition election lines logged by one pass; the rest are counted. */
const ELECTIONS_LOGGED = 20;

export class Controller {
  private fence: ControllerFence | undefined;
  private campaigning: Promise<void> | undefined;
  private campaignAgain = false;
  private running = false;
  private stopped = false;
  private reconciling: Promise<void> | undefined;
  private again = false;
  private rebalanceTimer: NodeJS.Timeout | undefined;
  private rebalancing = false;

  constructor(
    private readonly host: ControllerHost,
    private readonly options: ControllerOptions = DEFAULT_OPTIONS,
  ) {}

  /** True while this broker holds the controllership as far as its copy of etcd shows. */
  isActive(): boolean {
    const f = this.fence;
    return f !== undefined && this.host.state.controller?.createRevision === f.createRevision;
  }

  /** The fence of the controllership held (undefined when not controller). */
  currentFence(): ControllerFence | undefined {
    return this.isActive() ? this.fence : undefined;
  }

  /** Starts (or resumes after a lost session) campaigning. */
  start(): void {
    this.running = true;
    this.stopped = false;
    this.campaign();
    if (this.options.autoLeaderRebalance && this.rebalanceTimer === undefined) {
      // every broker ticks; only the active controller acts on it
      this.rebalanceTimer = setInterval(() => void this.rebalance(), Math.max(100, this.options.imbalanceCheckIntervalMs));
      this.rebalanceTimer.unref();
    }
  }

  /** Resigns: deletes the election key if it is still ours, and stops campaigning. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.running = false;
    if (this.rebalanceTimer !== undefined) clearInterval(this.rebalanceTimer);
    this.rebalanceTimer = undefined;
    const f = this.fence;
    this.fence = undefined;
    await this.campaigning?.catch(() => undefined);
    await this.reconciling?.catch(() => undefined);
    if (f === undefined) return;
    await this.host.client.kv
      .txn(
        { compare: [createdAt(this.host.keys.controller, f.createRevision)], success: [del(this.host.keys.controller)] },
        { deadline: Date.now() + CLOSE_DEADLINE_MS },
      )
      .catch(() => undefined);
    this.host.logger.info({ nodeId: this.host.nodeId, controllerEpoch: f.epoch }, 'controller resigned');
  }

  /** The session's lease is gone (so is the election key, in etcd): stop acting until elected again. */
  sessionLost(): void {
    if (this.fence !== undefined) this.resigned('session lost');
  }

  /** Called by the store for every change, before other listeners. */
  onChange(change: MetadataChange): void {
    if (change.kind === 'controller') {
      this.host.logger.info({ controllerId: change.controllerId }, change.controllerId === -1 ? 'no controller' : 'controller changed');
      if (this.fence !== undefined && !this.isActive()) this.resigned(`controller is now ${change.controllerId}`);
      if (change.controllerId === -1) this.campaign();
      return;
    }
    // configs too: turning unclean.leader.election.enable on (for a topic, or as a dynamic broker config) elects offline partitions
    if (change.kind === 'brokers' || change.kind === 'topic' || change.kind === 'brokerConfigs') this.schedule();
    // a reassignment completes once its new replicas joined the ISR
    else if (change.kind === 'partition' && isReassigning(change.state)) this.schedule();
  }

  /** One auto.leader.rebalance check: preferred replicas take back the partitions of imbalanced brokers. */
  async rebalance(): Promise<number> {
    const fence = this.currentFence();
    if (fence === undefined || this.rebalancing || this.halted()) return 0;
    this.rebalancing = true;
    try {
      const { state, logger } = this.host;
      const live = new Set(state.brokers.keys());
      const views: PartitionView[] = [];
      const revisions = new Map<PartitionView, { modRevision: number; topicCreateRevision: number }>();
      for (const [topic, t] of state.topics) {
        for (let partition = 0; partition < t.record.partitions; partition++) {
          const entry = state.partition(topic, partition);
          if (entry === undefined) continue;
          const v = { topic, partition, state: entry.state };
          views.push(v);
          revisions.set(v, { modRevision: entry.modRevision, topicCreateRevision: t.createRevision });
        }
      }
      const changes: PartitionChange[] = [];
      for (const v of rebalanceCandidates(views, live, this.options.imbalancePercentage)) {
        const next = preferredElection(v.state, live).state;
        const rev = revisions.get(v);
        if (next !== undefined && rev !== undefined) changes.push({ topic: v.topic, partition: v.partition, ...rev, state: next });
      }
      if (changes.length === 0) return 0;
      const ok = await this.writePartitions(changes, fence);
      logger.info({ partitions: changes.length, complete: ok }, 'auto leader rebalance: leadership back to preferred replicas');
      return changes.length;
    } catch (e) {
      this.host.logger.warn({ err: (e as Error).message }, 'auto leader rebalance failed; next check retries');
      return 0;
    } finally {
      this.rebalancing = false;
    }
  }

  /**
   * Changes a partition's ISR for its leader (Kafka's AlterPartition): the leader and partition epochs
   * must be current, the ISR must hold the leader and only live replicas. Resolves with the new state.
   * `asLeader`: the partition's leader asks on a broker that may not be the controller; the write is
   * then guarded by the partition's revision alone (fenced as usual when this broker is the controller).
   */
  async alterPartition(
    topic: string,
    partition: number,
    req: { leaderEpoch: number; partitionEpoch: number; isr: readonly number[] },
    opts: { asLeader?: boolean } = {},
  ): Promise<PartitionState> {
    const fence = this.currentFence();
    if (fence === undefined && opts.asLeader !== true)
      throw new MetadataWriteError(ErrorCode.NOT_CONTROLLER, `Broker ${this.host.nodeId} is not the controller.`);
    const entry = this.host.state.partition(topic, partition);
    const t = this.host.state.topics.get(topic);
    if (entry === undefined || t === undefined)
      throw new MetadataWriteError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `Unknown partition ${topic}-${partition}.`);
    const cur = entry.state;
    if (req.leaderEpoch !== cur.leaderEpoch) {
      throw new MetadataWriteError(
        ErrorCode.FENCED_LEADER_EPOCH,
        `Leader epoch ${req.leaderEpoch} of ${topic}-${partition} is not the current ${cur.leaderEpoch}.`,
      );
    }
    if (req.partitionEpoch !== cur.partitionEpoch) {
      throw new MetadataWriteError(
        ErrorCode.INVALID_UPDATE_VERSION,
        `Partition epoch ${req.partitionEpoch} of ${topic}-${partition} is not the current ${cur.partitionEpoch}.`,
      );
    }
    const isr = [...new Set(req.isr)];
    if (isr.length !== req.isr.length || !isr.includes(cur.leader) || isr.some((r) => !cur.replicas.includes(r))) {
      throw new MetadataWriteError(
        ErrorCode.INVALID_REQUEST,
        `ISR [${req.isr.join(',')}] of ${topic}-${partition} must hold its leader and only its replicas, once each.`,
      );
    }
    const dead = isr.filter((r) => !this.host.state.brokers.has(r));
    if (dead.length > 0)
      throw new MetadataWriteError(ErrorCode.INELIGIBLE_REPLICA, `Replicas ${dead.join(',')} of ${topic}-${partition} are not live.`);
    const next: PartitionState = { ...cur, isr, partitionEpoch: cur.partitionEpoch + 1 };
    const ok = await this.writePartitions(
      [{ topic, partition, modRevision: entry.modRevision, topicCreateRevision: t.createRevision, state: next }],
      fence,
    );
    if (!ok) {
      if (opts.asLeader !== true && this.currentFence() === undefined)
        throw new MetadataWriteError(ErrorCode.NOT_CONTROLLER, `Broker ${this.host.nodeId} is no longer the controller.`);
      throw new MetadataWriteError(
        ErrorCode.INVALID_UPDATE_VERSION,
        `${topic}-${partition} changed concurrently; retry with its new state.`,
      );
    }
    return next;
  }

  /**
   * Writes partition states in transactions of at most MAX_TXN_OPS operations, each fenced by `fence`
   * (and by every partition's and topic's revision). True when every batch committed; the copy then
   * holds them. A false answer may leave earlier batches committed. Without a fence (a partition's
   * leader changing its ISR) only the revisions guard the write: it commits only onto the state the
   * leader saw, so an election in between makes it fail.
   */
  async writePartitions(changes: readonly PartitionChange[], fence: ControllerFence | undefined): Promise<boolean> {
    const { keys } = this.host;
    const fenceCompares =
      fence === undefined ? [] : [createdAt(keys.controller, fence.createRevision), valueIs(keys.controllerEpoch, String(fence.epoch))];
    let i = 0;
    while (i < changes.length) {
      const compare = [...fenceCompares];
      const success = [];
      const failure = [get(keys.controller), get(keys.controllerEpoch)];
      const topics = new Set<string>();
      for (; i < changes.length; i++) {
        const c = changes[i] as PartitionChange;
        const extra = topics.has(c.topic) ? 1 : 2;
        if (compare.length + extra > MAX_TXN_OPS) break;
        if (!topics.has(c.topic)) {
          topics.add(c.topic);
          compare.push(createdAt(keys.topic(c.topic), c.topicCreateRevision));
          failure.push(get(keys.topic(c.topic)));
        }
        const key = keys.partition(c.topic, c.partition);
        compare.push(c.modRevision === 0 ? createdAt(key, 0) : modifiedAt(key, c.modRevision));
        success.push(put(key, JSON.stringify(c.state)));
        failure.push(get(key));
      }
      const res = await this.host.client.kv.txn({ compare, success, failure });
      if (!res.succeeded) {
        const kvs = rangedKeyValues(res);
        if (kvs.length > 0) await this.host.caughtUp(Math.max(...kvs.map((kv) => kv.modRevision)));
        return false;
      }
      await this.host.caughtUp(revisionOf(res));
    }
    return true;
  }

  /** Stopped or closed (a method, so that checks after an await are not narrowed away). */
  private halted(): boolean {
    return this.stopped || this.host.isClosed();
  }

  private resigned(why: string): void {
    const f = this.fence;
    this.fence = undefined;
    this.host.logger.warn({ nodeId: this.host.nodeId, controllerEpoch: f?.epoch, why }, 'controller stopped acting');
  }

  private campaign(): void {
    if (!this.running || this.stopped || this.fence !== undefined) return;
    if (this.campaigning !== undefined) {
      this.campaignAgain = true; // the key may have gone after the running attempt read it
      return;
    }
    this.campaignAgain = false;
    this.campaigning = this.runCampaign().finally(() => {
      this.campaigning = undefined;
      if (this.campaignAgain) this.campaign();
    });
  }

  private async runCampaign(): Promise<void> {
    const { keys, state, logger, nodeId } = this.host;
    while (this.running && !this.stopped && !this.host.isClosed()) {
      const lease = this.host.session.leaseOf();
      if (lease === undefined) return; // the session's recovery starts us again
      try {
        const epochRes = await this.host.client.kv.range({ key: Buffer.from(keys.controllerEpoch) });
        const epochKv = epochRes.kvs[0];
        const epoch = epochKv === undefined ? 0 : Number(epochKv.value.toString());
        const epochRev = epochKv === undefined ? 0 : Number(epochKv.mod_revision);
        const res = await this.host.client.kv.txn({
          compare: [createdAt(keys.controller, 0), modifiedAt(keys.controllerEpoch, epochRev)],
          success: [put(keys.controller, String(nodeId), lease), put(keys.controllerEpoch, String(epoch + 1))],
          failure: [get(keys.controller)],
        });
        let won: ControllerFence | undefined;
        if (res.succeeded) {
          won = { createRevision: revisionOf(res), epoch: epoch + 1 };
          await this.host.caughtUp(won.createRevision);
        } else {
          const holder = rangedKeyValues(res)[0];
          if (holder === undefined) continue; // the epoch moved under us; try again
          await this.host.caughtUp(holder.modRevision);
          // the key may be ours from an attempt whose answer we never got
          if (holder.lease !== lease || holder.value.toString() !== String(nodeId)) return;
          won = { createRevision: holder.createRevision, epoch: state.controllerEpoch?.value ?? 0 };
        }
        if (this.halted() || state.controller?.createRevision !== won.createRevision) return;
        this.fence = won;
        logger.info({ nodeId, controllerEpoch: won.epoch, electionRevision: won.createRevision }, 'became the controller');
        this.schedule();
        return;
      } catch (e) {
        if (this.host.isClosed()) return;
        logger.debug({ err: (e as Error).message }, 'controller campaign failed; retrying');
        await new Promise((r) => setTimeout(r, RETRY_MS));
      }
    }
  }

  /** Runs a reconciliation pass now, or once more after the one running. */
  private schedule(): void {
    if (!this.isActive()) return;
    if (this.reconciling !== undefined) {
      this.again = true;
      return;
    }
    this.reconciling = this.reconcileLoop().finally(() => (this.reconciling = undefined));
  }

  private async reconcileLoop(): Promise<void> {
    let failures = 0;
    do {
      this.again = false;
      const fence = this.currentFence();
      if (fence === undefined || this.stopped) return;
      let ok: boolean;
      try {
        ok = await this.reconcile(fence);
      } catch (e) {
        if (this.halted()) return;
        this.host.logger.warn({ err: (e as Error).message }, 'controller pass failed; retrying');
        ok = false;
      }
      if (!ok) {
        this.again = true;
        if (++failures > 3) await new Promise((r) => setTimeout(r, RETRY_MS));
      }
    } while (this.again && !this.host.isClosed());
  }

  /** One pass over every partition: the leader and ISR changes the live broker set calls for. */
  private async reconcile(fence: ControllerFence): Promise<boolean> {
    const { state, logger } = this.host;
    const live = new Set(state.brokers.keys());
    const changes: PartitionChange[] = [];
    for (const [topic, t] of state.topics) {
      const own = t.record.configs[UNCLEAN_KEY];
      const unclean = own !== undefined ? own.trim().toLowerCase() === 'true' : this.options.uncleanLeaderElection === true;
      for (let p = 0; p < t.record.partitions; p++) {
        const entry = state.partition(topic, p);
        if (entry === undefined) continue;
        const elected = nextState(entry.state, live, unclean);
        const next = completeReassignment(elected ?? entry.state, live) ?? elected;
        if (next !== undefined)
          changes.push({ topic, partition: p, modRevision: entry.modRevision, topicCreateRevision: t.createRevision, state: next });
      }
    }
    if (changes.length === 0) return true;
    const elections = changes.filter((c) => c.state.leader !== state.partition(c.topic, c.partition)?.state.leader);
    const completed = changes.filter(
      (c) => !isReassigning(c.state) && isReassigning(state.partition(c.topic, c.partition)?.state ?? c.state),
    );
    const ok = await this.writePartitions(changes, fence);
    if (!ok) return false;
    for (const c of elections.slice(0, ELECTIONS_LOGGED)) {
      logger.info(
        { topic: c.topic, partition: c.partition, leader: c.state.leader, leaderEpoch: c.state.leaderEpoch, isr: c.state.isr },
        c.state.leader === -1 ? 'partition offline: no live replica in its ISR' : 'partition leader elected',
      );
    }
    if (elections.length > ELECTIONS_LOGGED) logger.info({ more: elections.length - ELECTIONS_LOGGED }, 'more partition leader changes');
    for (const c of completed)
      logger.info({ topic: c.topic, partition: c.partition, replicas: c.state.replicas, leader: c.state.leader }, 'reassignment completed');
    return true;
  }
}

/**
 * The state a partition moves to given the live brokers, or undefined when it stays. With `unclean`
 * (unclean.leader.election.enable), a partition whose whole ISR is down is led by its first live
 * replica, alone in the ISR (what only the old ISR had may be lost), as Kafka's controller does.
 */
export function nextState(cur: PartitionState, live: ReadonlySet<number>, unclean = false): PartitionState | undefined {
  const liveIsr = cur.isr.filter((r) => live.has(r));
  if (cur.leader !== -1 && live.has(cur.leader)) {
    if (liveIsr.length === cur.isr.length || liveIsr.length === 0) return undefined;
    return { ...cur, isr: liveIsr, partitionEpoch: cur.partitionEpoch + 1 };
  }
  const leader = cur.replicas.find((r) => live.has(r) && cur.isr.includes(r)) ?? -1;
  if (leader === -1 && unclean) {
    // not a replica still being added by a reassignment (it may hold nothing yet)
    const any = cur.replicas.find((r) => live.has(r) && !(cur.addingReplicas ?? []).includes(r));
    if (any !== undefined)
      return { ...cur, leader: any, leaderEpoch: cur.leaderEpoch + 1, isr: [any], partitionEpoch: cur.partitionEpoch + 1 };
  }
  if (leader === -1 && cur.leader === -1) return undefined; // still offline
  return {
    ...cur,
    leader,
    leaderEpoch: cur.leaderEpoch + 1,
    isr: liveIsr.length > 0 ? liveIsr : cur.isr,
    partitionEpoch: cur.partitionEpoch + 1,
  };
}
