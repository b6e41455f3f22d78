/**
 * The vocabulary of the compatibility suite: clients (matrix columns) expose operations, scenarios
 * (matrix rows) drive them against a broker, and each pair yields one cell with an outcome.
 */

export type Codec = 'none' | 'gzip' | 'snappy' | 'lz4' | 'zstd';
export const CODECS: readonly Codec[] = ['none', 'gzip', 'snappy', 'lz4', 'zstd'];
export type Acks = 0 | 1 | -1;

/** A record as the suite writes it: text only, so every client (kcat included) can carry it. */
export interface TestRecord {
  partition: number;
  key: string | null;
  value: string;
  headers: [string, string][];
  /** CreateTime in ms; clients that cannot set it let the producer stamp it. */
  timestamp: number;
}

/** A record as a client read it back. */
export interface ReadRecord {
  partition: number;
  offset: number;
  key: string | null;
  value: string | null;
  headers: [string, string][];
  timestamp: number;
}

export interface MetadataView {
  brokers: { nodeId: number; host: string; port: number }[];
  topics: { name: string; partitions: { partition: number; leader: number }[] }[];
}

export interface ProduceSpec {
  topic: string;
  records: TestRecord[];
  codec: Codec;
  acks: Acks;
  idempotent?: boolean;
}

export interface ConsumeSpec {
  topic: string;
  /** Read `count` records of each partition starting at `from`. */
  partitions: { partition: number; from: number; count: number }[];
  timeoutMs: number;
}

/** What a client saw while running the group steps (see scenarios/groups.ts). */
export interface GroupObservation {
  /** partitions of the first member while it was alone */
  firstAssignment: number[];
  /** each member's partitions once a second member joined */
  rebalanced: number[][];
  /** offsets the client committed, per partition */
  committed: Record<number, number>;
  /** first offset a fresh member of the group was given, per partition */
  resumed: Record<number, number>;
}

export interface GroupSpec {
  topic: string;
  groupId: string;
  partitions: number;
  /** records already in each partition */
  perPartition: number;
  /** how many records of each partition to consume and commit before the rebalance */
  commitAt: number;
  timeoutMs: number;
}

/** The group protocol a member speaks: the classic JoinGroup/SyncGroup one or KIP-848's ConsumerGroupHeartbeat. */
export type GroupProtocol = 'classic' | 'consumer';

/** A group member subscribed with a regular expression (scenarios/group-features.ts). */
export interface RegexGroupSpec {
  protocol: GroupProtocol;
  groupId: string;
  /** the pattern as the client takes it, e.g. `^compat-…-rx-.*` */
  pattern: string;
  /** records the member must read before `afterJoin` runs: topic → count (the existing matching topics) */
  expect: Record<string, number>;
  /** creates a topic matching the pattern and writes `count` records to it; called once `expect` was read */
  afterJoin(): Promise<{ topic: string; count: number }>;
  /** how long to wait for the new topic's records (a client that does not follow new topics is watched this long) */
  lateWaitMs: number;
  /** the client's metadata refresh interval (classic: the client matches the pattern on each refresh) */
  metadataRefreshMs: number;
  timeoutMs: number;
}

export interface RegexGroupObservation {
  /** every record the member read */
  records: { topic: string; partition: number; offset: number; value: string | null }[];
  /** ms from the new topic's creation to its first record read; null when none arrived */
  lateMs: number | null;
  /** topics of the member's assignment when it stopped */
  assigned: string[];
}

/** Two static members (group.instance.id) of one group (scenarios/group-features.ts). */
export interface StaticGroupSpec {
  protocol: GroupProtocol;
  topic: string;
  partitions: number;
  groupId: string;
  /** classic: the members' session.timeout.ms; consumer protocol: the broker's (not settable by the client) */
  sessionTimeoutMs: number;
  /** how long member B stays stopped before it restarts (well within the session timeout) */
  downMs: number;
  /** how long member A is watched after B is back */
  watchMs: number;
  timeoutMs: number;
}

export interface StaticGroupObservation {
  /** A's and B's partitions once both are members */
  a: number[];
  b: number[];
  /** A's rebalance callbacks (assign and revoke) up to then */
  aCallbacks: number;
  /** B's partitions after its restart, and ms from its stop until it had them */
  bAgain: number[];
  bAgainMs: number;
  /** A's partitions and callback count `watchMs` after B was back */
  aAfterRestart: number[];
  aCallbacksAfterRestart: number;
  /** A's partitions once it held them all after B's second stop, and ms from that stop */
  aAlone: number[];
  takeoverMs: number;
}

export interface RebalanceEvent {
  kind: 'assign' | 'revoke';
  partitions: number[];
}

/** Three members with an incremental (cooperative) protocol; the third leaves (scenarios/group-features.ts). */
export interface CooperativeGroupSpec {
  protocol: GroupProtocol;
  topic: string;
  partitions: number;
  groupId: string;
  timeoutMs: number;
}

export interface CooperativeGroupObservation {
  /** the rebalance protocol the client reported (librdkafka: COOPERATIVE / EAGER / NONE) */
  rebalanceProtocol: string;
  /** the three members' partitions once all three were in */
  before: number[][];
  /** the two remaining members' rebalance callbacks from the leave on */
  eventsAfter: RebalanceEvent[][];
  /** the two remaining members' partitions once they held every partition, after a short settle */
  after: number[][];
  /** ms from the leave until the two held every partition */
  settleMs: number;
}

export interface TxnSpec {
  topic: string;
  transactionalId: string;
  aborted: TestRecord[];
  committed: TestRecord[];
}

export interface ShareGroupSpec {
  topic: string;
  groupId: string;
  members: number;
  /** records to wait for (accepted across the members) */
  expect: number;
  timeoutMs: number;
}

export interface ShareGroupObservation {
  /** per member: the offsets it accepted, in delivery order */
  accepted: number[][];
  errors: string[];
}

/** Operations a client may implement; a missing one makes its cells "not supported by client". */
export interface ClientOps {
  metadata(bootstrap: string, topics: string[]): Promise<MetadataView>;
  produce(bootstrap: string, spec: ProduceSpec): Promise<void>;
  consume(bootstrap: string, spec: ConsumeSpec): Promise<ReadRecord[]>;
  offsetForTime(bootstrap: string, topic: string, partition: number, timestamp: number): Promise<number>;
  createTopic(bootstrap: string, topic: string, partitions: number): Promise<void>;
  deleteTopic(bootstrap: string, topic: string): Promise<void>;
  createPartitions(bootstrap: string, topic: string, total: number): Promise<void>;
  describeConfigs(bootstrap: string, topic: string, names: string[]): Promise<Record<string, string | null>>;
  alterConfigs(bootstrap: string, topic: string, entries: Record<string, string>): Promise<void>;
  /** Deletes records before `before`; returns the new low watermark. */
  deleteRecords(bootstrap: string, topic: string, partition: number, before: number): Promise<number>;
  group(bootstrap: string, spec: GroupSpec): Promise<GroupObservation>;
  /** Runs an aborted then a committed transaction; returns what a read_committed read of the topic saw. */
  transactions(bootstrap: string, spec: TxnSpec): Promise<ReadRecord[]>;
  /** One member subscribed with a pattern: what it read, before and after a matching topic was created. */
  regexGroup(bootstrap: string, spec: RegexGroupSpec): Promise<RegexGroupObservation>;
  /** Static members A and B: B restarts within the session timeout, then stays away longer. */
  staticGroup(bootstrap: string, spec: StaticGroupSpec): Promise<StaticGroupObservation>;
  /** Three incremental-protocol members; one leaves. */
  cooperativeGroup(bootstrap: string, spec: CooperativeGroupSpec): Promise<CooperativeGroupObservation>;
  /** Share-group members (KIP-932) on one partition: what each accepted. */
  shareGroup(bootstrap: string, spec: ShareGroupSpec): Promise<ShareGroupObservation>;
}
export type OpName = keyof ClientOps;

export interface ClientCapabilities {
  codecs: readonly Codec[];
  /** can set each record's timestamp */
  timestamps: boolean;
  /** headers: per record, one header set per produce call, or none (message format 0/1) */
  headers: 'per-record' | 'per-call' | 'none';
  idempotence: boolean;
  /** speaks the KIP-848 consumer group protocol (group.protocol=consumer) */
  consumerProtocol: boolean;
  /** set when a regex subscription is resolved once and never follows topics created later: what the client documents */
  regexResolvedOnce?: string;
}

export interface Client {
  /** matrix column id, e.g. "kafkajs" */
  id: string;
  /** short column title */
  title: string;
  /** what the column is (library, API style, mode) */
  description: string;
  caps: ClientCapabilities;
  ops: Partial<ClientOps>;
  /** why an op is missing (shown in the cell) */
  unsupported: Partial<Record<OpName | 'idempotence' | 'consumerProtocol' | Codec, string>>;
  /** null when usable, otherwise why not (e.g. not installed); a client that must ask a process answers with a Promise */
  unavailable(): string | null | Promise<string | null>;
  /** library and protocol-implementation versions, for results.json; thrown or rejected errors are recorded there */
  versions(): Record<string, string> | Promise<Record<string, string>>;
  /** releases anything kept between cells */
  close?(): Promise<void>;
}

/** A client or scenario can say "not possible here" mid-run; the cell then reads "— not supported by client". */
export class NotSupportedError extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'NotSupportedError';
  }
}

export type Outcome = 'pass' | 'fail' | 'unsupported-client' | 'unsupported-broker' | 'needs-gregor';

export interface CellResult {
  scenario: string;
  client: string;
  outcome: Outcome;
  /** failure message or the reason a cell did not run */
  reason?: string;
  /** what was checked, in a line or two */
  details?: string;
  durationMs: number;
}
