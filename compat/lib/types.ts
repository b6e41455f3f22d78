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

export interface TxnSpec {
  topic: string;
  transactionalId: string;
  aborted: TestRecord[];
  committed: TestRecord[];
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
}
export type OpName = keyof ClientOps;

export interface ClientCapabilities {
  codecs: readonly Codec[];
  /** can set each record's timestamp */
  timestamps: boolean;
  /** headers: per record, one header set per produce call, or none (message format 0/1) */
  headers: 'per-record' | 'per-call' | 'none';
  idempotence: boolean;
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
  unsupported: Partial<Record<OpName | 'idempotence' | Codec, string>>;
  /** null when usable, otherwise why not (e.g. not installed) */
  unavailable(): Promise<string | null>;
  /** library and protocol-implementation versions, for results.json */
  versions(): Promise<Record<string, string>>;
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
