/**
 * Topic lifecycle on one node: create (with validation and configs), delete, add partitions, alter
 * configs. Owns the link between the metadata store (what exists) and the partition logs (the data).
 */
import type { Logger } from 'pino';
import { ErrorCode } from '../protocol/generated/error-codes.js';
import { type BrokerConfig, parseTopicConfig } from './config.js';
import { logConfigFrom, type LogConfig } from './log/log-config.js';
import type { ConversionRunner } from './log/convert.js';
import type { LogManager } from './log/log-dirs.js';
import type { PartitionLog } from './log/partition-log.js';
import { isNoSpace } from './log/errors.js';
import { checkAddPartitions, checkCreate, type CreateTopicSpec, TopicError, validateTopicConfigs } from './topic-checks.js';
import { TopicArrivals } from './topic-arrivals.js';
import { type ReplicaRemovedListener, TopicReplicas } from './topic-replicas.js';
import { type MetadataChange, type MetadataStore, MetadataWriteError, type NewTopic, type TopicRecord } from './metadata/store.js';

export { INTERNAL_TOPICS, TopicError } from './topic-checks.js';
export type { CreateTopicSpec } from './topic-checks.js';

type PartitionListener = (topic: string, partition: number, log: PartitionLog) => void;
type TopicsListener = (topic: string, change: 'created' | 'deleted' | 'partitions') => void;
type LeadershipListener = (topic: string, partition: number, leads: boolean) => void;

/** A topic's logs by partition index: undefined where this broker holds no replica (clusters). */
export type TopicLogs = readonly (PartitionLog | undefined)[];

/** How long an auto-creation that lost a race waits for the winner's topic to reach this broker. */
const RACED_CREATION_WAIT_MS = 5000;

/** Opens `logs` (the log manager bounds how many open at once); rejects with the first failure once all have settled. */
async function openAll(logs: readonly (PartitionLog | undefined)[]): Promise<void> {
  const opening: Promise<void>[] = [];
  for (const l of logs) if (l !== undefined) opening.push(l.open());
  const failed = (await Promise.allSettled(opening)).find((r) => r.status === 'rejected');
  if (failed !== undefined) throw failed.reason;
}

export class TopicManager {
  /** Every log this broker holds (one node: every partition), by topic and partition index. */
  private readonly logs = new Map<string, (PartitionLog | undefined)[]>();
  /**
   * The logs of the partitions this broker leads, what client requests are served from. One node: the
   * same arrays as `logs`; a cluster: kept by the partition states the metadata store reports.
   */
  private readonly led: Map<string, (PartitionLog | undefined)[]>;
  private readonly opening = new Map<string, Promise<(PartitionLog | undefined)[]>>();
  /** Whether partitions can live on other brokers (metadata.store=etcd). */
  readonly clustered: boolean;
  /** Topics this broker is creating: their logs are made by create(), not by the change the store reports. */
  private readonly creating = new Set<string>();
  private readonly listeners: PartitionListener[] = [];
  private readonly topicsListeners: TopicsListener[] = [];
  private readonly leadershipListeners: LeadershipListener[] = [];
  /** awaitTopic's callers, told when the store reports the topic created */
  private readonly arrivals = new TopicArrivals();
  /** Clusters: the logs held follow the replicas of the partition states (reassignments). */
  private readonly replicas: TopicReplicas;
  private changes = 0;

  constructor(
    private readonly config: BrokerConfig,
    private readonly metadata: MetadataStore,
    private readonly logManager: LogManager,
    private readonly logger: Logger,
    /** Runs recompression / format conversion for the partition logs (the append worker pool). */
    private readonly converter?: ConversionRunner,
  ) {
    this.clustered = metadata.kind !== 'local';
    this.led = this.clustered ? new Map<string, (PartitionLog | undefined)[]>() : this.logs;
    this.replicas = new TopicReplicas({
      metadata,
      logManager,
      logger,
      settledLogs: (topic) => (this.creating.has(topic) || this.opening.has(topic) ? undefined : this.logs.get(topic)),
      attach: (topic, partition) => {
        const t = this.metadata.topic(topic);
        const logs = this.logs.get(topic);
        if (t === undefined || logs === undefined) return;
        const log = this.logManager.attach(
          topic,
          partition,
          this.logConfig(t),
          this.converter === undefined ? {} : { converter: this.converter },
        );
        logs[partition] = log;
        for (const l of this.listeners) l(topic, partition, log);
      },
    });
    if (this.clustered) metadata.onChange((c) => this.applyChange(c));
  }

  /**
   * Counts every metadata change this manager saw and every change to the logs it holds or leads (a
   * topic made, deleted, a partition led or no longer): what was looked up here (a led log, a leader
   * epoch) holds while it stays the same (the replica fetch path's per-partition cache).
   */
  get generation(): number {
    return this.changes;
  }

  /** A change another broker (or the controller) made: open, drop or re-lead logs to match. */
  private applyChange(c: MetadataChange): void {
    if (c.kind === 'topic' && c.change === 'created') this.arrivals.arrived(c.topic);
    this.changes++;
    if (c.kind === 'partition') {
      this.replicas.changed(c.topic, c.partition);
      this.refreshLeadership(c.topic, c.partition);
      return;
    }
    if (c.kind !== 'topic') return;
    const t = this.metadata.topic(c.topic);
    if (c.change === 'deleted') {
      if (t !== undefined || !this.logs.has(c.topic)) return;
      this.logs.delete(c.topic);
      this.led.delete(c.topic);
      this.topicsChanged(c.topic, 'deleted');
      void this.logManager
        .deleteTopic(c.topic)
        .catch((err: unknown) => this.logger.error({ err, topic: c.topic }, 'deleting a topic failed'));
      return;
    }
    if (t === undefined || this.creating.has(t.name)) return;
    if (c.change === 'configs') {
      const cfg = this.logConfig(t);
      for (const log of this.logs.get(t.name) ?? []) log?.updateConfig(cfg);
      return;
    }
    const known = this.logs.get(t.name)?.length ?? 0;
    if (known >= t.partitions) return;
    void this.openLogs(t).then(
      () => this.topicsChanged(t.name, known === 0 ? 'created' : 'partitions'),
      (err: unknown) => this.logger.error({ err, topic: t.name }, 'opening the logs of a topic failed'),
    );
  }

  /** Clusters: called when a reassignment takes a replica off this broker, before its log is deleted. */
  onReplicaRemoved(l: ReplicaRemovedListener): void {
    this.replicas.onRemoved(l);
  }

  /** Whether this broker holds a replica of the partition. */
  private holdsReplica(topic: string, partition: number): boolean {
    return !this.clustered || this.replicas.holds(topic, partition);
  }

  /** Serves the partition from here when this broker leads it, and stops when it does not. */
  private refreshLeadership(topic: string, partition: number): void {
    if (!this.clustered) return;
    const log = this.logs.get(topic)?.[partition];
    const leads = log !== undefined && this.metadata.partitionState(topic, partition)?.leader === this.metadata.nodeId;
    let led = this.led.get(topic);
    if (led === undefined) {
      if (!leads) return;
      led = [];
      this.led.set(topic, led);
    }
    const t = this.metadata.topic(topic);
    if (t !== undefined && led.length < t.partitions) led.length = t.partitions;
    const before = led[partition] !== undefined;
    if (led[partition] !== (leads ? log : undefined)) this.changes++;
    led[partition] = leads ? log : undefined;
    if (before === leads) return;
    this.logger.debug(
      { topic, partition, leaderEpoch: this.leaderEpoch(topic, partition) },
      leads ? 'leading the partition' : 'no longer leading the partition',
    );
    for (const l of this.leadershipListeners) {
      try {
        l(topic, partition, leads);
      } catch (e) {
        this.logger.error({ err: e, topic, partition }, 'leadership listener failed');
      }
    }
  }

  /**
   * Makes the logs of every known topic (at start-up). A log opens on first use; only those that
   * must be recovered first (after an unclean shutdown) and the coordinators' internal topics are
   * opened here.
   */
  async loadAll(): Promise<void> {
    for (const t of this.metadata.topics()) await this.openLogs(t);
    if (this.clustered) await this.replicas.deleteStray();
  }

  /** Called for each partition log as it is made (its files open on first use). */
  onPartitionOpened(l: PartitionListener): void {
    this.listeners.push(l);
  }

  /** Clusters: called when this broker starts or stops leading a partition it holds. */
  onLeadershipChanged(l: LeadershipListener): void {
    this.leadershipListeners.push(l);
  }

  /** Called once a topic is created (logs open), deleted, or given more partitions. */
  onTopicsChanged(l: TopicsListener): void {
    this.topicsListeners.push(l);
  }

  private topicsChanged(topic: string, change: 'created' | 'deleted' | 'partitions'): void {
    for (const l of this.topicsListeners) {
      try {
        l(topic, change);
      } catch (e) {
        this.logger.error({ err: e, topic, change }, 'topic change listener failed');
      }
    }
  }

  /** Re-resolves every open log's config (after a dynamic broker config changed a topic default). */
  refreshLogConfigs(): void {
    for (const [name, logs] of this.logs) {
      const t = this.metadata.topic(name);
      if (t === undefined) continue;
      const cfg = this.logConfig(t);
      for (const log of logs) log?.updateConfig(cfg);
    }
  }

  logConfig(t: TopicRecord): LogConfig {
    const overrides = new Map<string, string | number | bigint | boolean | string[] | null>();
    for (const [k, v] of Object.entries(t.configs)) overrides.set(k, parseTopicConfig(k, v));
    return logConfigFrom(this.config, overrides);
  }

  private async openLogs(t: TopicRecord): Promise<(PartitionLog | undefined)[]> {
    const existing = this.logs.get(t.name);
    if (existing !== undefined && existing.length === t.partitions) return existing;
    const pending = this.opening.get(t.name);
    if (pending !== undefined) return pending;
    const p = (async () => {
      const cfg = this.logConfig(t);
      const logs = existing ?? [];
      const opts = this.converter === undefined ? {} : { converter: this.converter };
      const added: (PartitionLog | undefined)[] = [];
      for (let i = logs.length; i < t.partitions; i++)
        added.push(this.holdsReplica(t.name, i) ? this.logManager.attach(t.name, i, cfg, opts) : undefined);
      // the coordinators load their internal topics at once, except the logs known empty (a new
      // topic's fifty, most of which a small broker never writes): each coordinator opens a log before
      // its first append to it. Other logs to recover after an unclean shutdown are recovered on first
      // use (see recover) or by the log manager's background pass
      if (t.internal) await openAll(added.filter((l) => l !== undefined && !l.knownEmpty));
      for (const log of added) {
        logs.push(log);
        if (log !== undefined) for (const l of this.listeners) l(t.name, log.partition, log);
      }
      this.logs.set(t.name, logs);
      this.changes++;
      if (this.clustered) for (let i = 0; i < logs.length; i++) this.refreshLeadership(t.name, i);
      return logs;
    })();
    this.opening.set(t.name, p);
    try {
      return await p;
    } finally {
      this.opening.delete(t.name);
    }
  }

  /**
   * The log of a partition this broker leads: undefined when the topic or partition does not exist
   * (yet), or (clusters) another broker leads it — `notHereError` says which.
   */
  partition(topic: string, partition: number): PartitionLog | undefined {
    return this.led.get(topic)?.[partition];
  }

  /** The logs of the partitions of `topic` this broker leads, by partition index (one lookup for a request naming many). */
  logsOf(topic: string): TopicLogs | undefined {
    return this.led.get(topic);
  }

  /** The log this broker holds for the partition, led or not (the coordinators' loaders, metrics). */
  replica(topic: string, partition: number): PartitionLog | undefined {
    return this.logs.get(topic)?.[partition];
  }

  /** Whether the topic has this partition (wherever it lives). */
  exists(topic: string, partition: number): boolean {
    const t = this.metadata.topic(topic);
    return t !== undefined && partition >= 0 && partition < t.partitions;
  }

  /** What a partition request answers for a partition `partition()` has no log for. */
  notHereError(topic: string, partition: number): number {
    const t = this.metadata.topic(topic);
    if (t === undefined || partition < 0 || partition >= t.partitions || !this.clustered) return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION;
    return this.metadata.partitionState(topic, partition)?.leader === -1
      ? ErrorCode.LEADER_NOT_AVAILABLE
      : ErrorCode.NOT_LEADER_OR_FOLLOWER;
  }

  /** The leader epoch appends to a partition this broker leads are stamped with (one node: 0). */
  leaderEpoch(topic: string, partition: number): number {
    return this.clustered ? (this.metadata.partitionState(topic, partition)?.leaderEpoch ?? 0) : 0;
  }

  /**
   * Waits until the logs of `topic` exist (right after creation they may still be in the making).
   * They open on first use: see openPartitions for the calls that need an open log.
   */
  async ready(topic: string): Promise<TopicLogs | undefined> {
    const t = this.metadata.topic(topic);
    if (t === undefined) return undefined;
    return this.openLogs(t);
  }

  /**
   * Opens the logs of these partitions of `topic` (those it has), for the synchronous calls that
   * need an open log: a timestamp search, DeleteRecords, producer state. A log that fails to open
   * is offline and answers every call with its error.
   */
  async openPartitions(topic: string, partitions: Iterable<number>): Promise<void> {
    const logs = await this.ready(topic);
    if (logs === undefined) return;
    const wanted: PartitionLog[] = [];
    for (const p of partitions) {
      const log = this.logs.get(topic)?.[p];
      if (log !== undefined && !log.isOpen) wanted.push(log);
    }
    await openAll(wanted).catch(() => undefined);
  }

  /** Whether some log waits for recovery (after an unclean shutdown, until all are recovered). */
  get recovering(): boolean {
    return this.logManager.recovering;
  }

  /**
   * Recovers those of `logs` that wait for it (after an unclean shutdown, see LogManager): every
   * call that answers from a log's offsets, sizes or epochs passes its logs here first. A log that
   * fails to recover is offline (`servable` stays false): callers answer KAFKA_STORAGE_ERROR.
   */
  async recover(logs: Iterable<PartitionLog | undefined>): Promise<void> {
    if (!this.logManager.recovering) return;
    const wanted: PartitionLog[] = [];
    for (const log of logs) if (log !== undefined && !log.servable && !log.isOffline) wanted.push(log);
    if (wanted.length > 0) await openAll(wanted).catch(() => undefined);
  }

  /** recover() for these partitions of `topic` (those it has). */
  async recoverPartitions(topic: string, partitions: Iterable<number>): Promise<void> {
    if (!this.logManager.recovering) return;
    const logs = this.logs.get(topic);
    if (logs === undefined) return;
    const wanted: (PartitionLog | undefined)[] = [];
    for (const p of partitions) wanted.push(logs[p]);
    await this.recover(wanted);
  }

  /** Validates a creation; returns the record that would be created. Throws TopicError. */
  checkCreate(spec: CreateTopicSpec, opts: { internal?: boolean } = {}): NewTopic {
    const live = this.clustered ? this.metadata.brokers().map((b) => b.nodeId) : [this.metadata.nodeId];
    return checkCreate(spec, { metadata: this.metadata, config: this.config, liveBrokers: live, internal: opts.internal === true });
  }

  async create(spec: CreateTopicSpec, opts: { internal?: boolean } = {}): Promise<TopicRecord> {
    let rec: TopicRecord;
    const checked = this.checkCreate(spec, opts);
    this.creating.add(checked.name);
    try {
      rec = await this.metadata.createTopic(checked);
      this.logger.info({ topic: rec.name, partitions: rec.partitions, topicId: rec.topicId }, 'topic created');
      await this.openLogs(rec);
    } catch (e) {
      if (e instanceof MetadataWriteError) {
        if (e.errorCode === ErrorCode.TOPIC_ALREADY_EXISTS && this.clustered) this.openRaced(checked.name);
        throw new TopicError(e.errorCode, e.message);
      }
      throw e;
    } finally {
      this.creating.delete(checked.name);
    }
    this.topicsChanged(rec.name, 'created');
    return rec;
  }

  /**
   * Another broker created the topic while this one was creating it (two coordinators making an
   * internal topic on first use at once): the store's report of the topic was passed over (see
   * `creating`), so its logs are opened here as that report would have opened them. Without this
   * the broker holds no replica of the topic until something asks for it again.
   */
  private openRaced(name: string): void {
    void this.awaitTopic(name).then(
      (t) => {
        if (t !== undefined) this.topicsChanged(name, 'created');
      },
      (err: unknown) => this.logger.error({ err, topic: name }, 'opening the logs of a topic failed'),
    );
  }

  /** Creates the topic with broker defaults when auto-creation is on and the name is valid. */
  async autoCreate(name: string): Promise<TopicRecord | TopicError> {
    try {
      return await this.createOrTakeRaced({ name, numPartitions: -1, replicationFactor: -1, configs: {} });
    } catch (e) {
      if (e instanceof TopicError) return e;
      throw e;
    }
  }

  /** A coordinator's internal topic on first use: created when missing (or taken from a broker that raced this one), its logs opened. */
  async ensureInternal(spec: CreateTopicSpec): Promise<void> {
    if (this.metadata.topic(spec.name) === undefined) await this.createOrTakeRaced(spec, { internal: true });
    await this.ready(spec.name);
  }

  /**
   * create(), except that in a cluster another broker creating the topic at the same moment counts as
   * this creation (as Kafka's auto topic creation takes TOPIC_ALREADY_EXISTS): its topic reaches this
   * one through the watch.
   */
  private async createOrTakeRaced(spec: CreateTopicSpec, opts: { internal?: boolean } = {}): Promise<TopicRecord> {
    try {
      return await this.create(spec, opts);
    } catch (e) {
      if (!(e instanceof TopicError && e.errorCode === ErrorCode.TOPIC_ALREADY_EXISTS && this.clustered)) throw e;
      const t = await this.awaitTopic(spec.name);
      if (t === undefined) throw e;
      return t;
    }
  }

  /** The topic once this broker's view has it (undefined after RACED_CREATION_WAIT_MS), its logs made. */
  private async awaitTopic(name: string): Promise<TopicRecord | undefined> {
    const deadline = Date.now() + RACED_CREATION_WAIT_MS;
    let t = this.metadata.topic(name);
    while (t === undefined && Date.now() < deadline) {
      await this.arrivals.wait(name, deadline - Date.now());
      t = this.metadata.topic(name);
    }
    if (t !== undefined) await this.openLogs(t);
    return t;
  }

  async delete(name: string): Promise<void> {
    const t = this.metadata.topic(name);
    if (t === undefined) throw new TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 'This server does not host this topic-partition.');
    if (t.internal) throw new TopicError(ErrorCode.TOPIC_AUTHORIZATION_FAILED, `Deletion of internal topic ${name} is not allowed.`);
    if (!this.config.bool('delete.topic.enable')) throw new TopicError(ErrorCode.TOPIC_DELETION_DISABLED, 'Topic deletion is disabled.');
    const deleted = this.metadata.deleteTopic(name);
    this.logs.delete(name);
    this.led.delete(name);
    this.changes++;
    this.topicsChanged(name, 'deleted');
    // on a full disk the metadata write fails: the logs go first (freeing their space), then it is retried
    const unsaved = await deleted.then(
      () => null,
      (err: unknown) => {
        if (!isNoSpace(err)) throw err;
        return err;
      },
    );
    await this.logManager.deleteTopic(name);
    if (unsaved !== null) {
      this.logger.warn({ topic: name, err: unsaved }, "writing the metadata failed; retrying now that the topic's logs are deleted");
      await this.metadata.persisted();
    }
    this.logger.info({ topic: name }, 'topic deleted');
  }

  checkAddPartitions(name: string, count: number): TopicRecord {
    return checkAddPartitions(this.metadata, name, count);
  }

  async addPartitions(name: string, count: number): Promise<void> {
    this.checkAddPartitions(name, count);
    await this.metadata.setPartitionCount(name, count);
    const t = this.metadata.topic(name);
    if (t !== undefined) await this.openLogs(t);
    this.topicsChanged(name, 'partitions');
  }

  /** Replaces (incremental=false) or patches the topic's configs; null values delete a key. */
  async alterConfigs(
    name: string,
    changes: Record<string, string | null>,
    opts: { incremental: boolean; validateOnly: boolean },
  ): Promise<void> {
    const t = this.metadata.topic(name);
    if (t === undefined) throw new TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `Topic ${name} does not exist.`);
    const merged: Record<string, string | null> = opts.incremental ? { ...t.configs, ...changes } : { ...changes };
    const next = validateTopicConfigs(merged);
    if (opts.validateOnly) return;
    await this.metadata.setConfigs(name, next);
    const cfg = this.logConfig(this.metadata.topic(name) ?? t);
    for (const log of this.logs.get(name) ?? []) log?.updateConfig(cfg);
  }
}
