/**
 * What the broker knows of the cluster, behind one interface with two implementations:
 * - `local` (lib/metadata/local-store.ts): one node, state in the data dir, no dependencies — the default;
 * - `etcd` (lib/metadata/etcd-store.ts, `metadata.store=etcd`): brokers register under a lease, a
 *   controller elected through etcd owns partition leadership, and every broker watches the state.
 * Reads are synchronous (from memory: the local state, or the etcd store's watched copy); writes are
 * asynchronous and resolve once they are durable (on disk, or committed in etcd and seen by the watch).
 */
import type { ClientQuotas } from '../quota/entity.js';

export type { ClientQuotas };
import type { AclBinding } from '../security/acl/types.js';

export interface TopicRecord {
  name: string;
  /** 32 lowercase hex digits; never all zero. */
  topicId: string;
  partitions: number;
  replicationFactor: number;
  configs: Record<string, string>;
  internal: boolean;
}

/** A new topic: its partitions' replicas are placed by the store (`assignments` when the request named them). */
export type NewTopic = Omit<TopicRecord, 'topicId'> & { topicId?: string; assignments?: readonly (readonly number[])[] };

export interface BrokerEndpoint {
  /** Listener name (PLAINTEXT, …). */
  listener: string;
  host: string;
  port: number;
}

/** A live broker as registered (etcd: under its lease; local: this node). */
export interface BrokerInfo {
  nodeId: number;
  rack: string | null;
  /** Advertised endpoints, one per listener. */
  endpoints: readonly BrokerEndpoint[];
  /** Grows every time the broker registers anew (etcd: the registration's create revision). */
  brokerEpoch: number;
}

/** One partition's leadership, as Kafka's PartitionRecord/PartitionChangeRecord carry it. */
export interface PartitionState {
  /** -1: no leader (every replica in the ISR is down). */
  leader: number;
  leaderEpoch: number;
  replicas: readonly number[];
  isr: readonly number[];
  /** Grows with every change of this state (leader, ISR or replicas). */
  partitionEpoch: number;
  /**
   * A reassignment in progress (Kafka's PartitionRegistration): replicas joining and leaving. `replicas`
   * then lists the target's first, then those leaving. Absent (or empty) when none is in progress.
   */
  addingReplicas?: readonly number[];
  removingReplicas?: readonly number[];
}

/** A SCRAM credential as stored: base64 salt, StoredKey and ServerKey (RFC 5802), never the password. */
export interface StoredScramCredential {
  salt: string;
  iterations: number;
  storedKey: string;
  serverKey: string;
}

/** SCRAM credentials of users: user → mechanism name (SCRAM-SHA-256, SCRAM-SHA-512) → credential. */
export type ScramCredentials = ReadonlyMap<string, Readonly<Record<string, StoredScramCredential>>>;

/** ElectLeaders' election types (the request's electionType). */
export const ElectionType = { PREFERRED: 0, UNCLEAN: 1 } as const;
export type ElectionType = (typeof ElectionType)[keyof typeof ElectionType];

/** One partition named by an admin request. */
export interface TopicPartitionRef {
  topic: string;
  partition: number;
}

/** What an admin change came to for one partition (Kafka's per-partition error code and message). */
export interface PartitionResult extends TopicPartitionRef {
  errorCode: number;
  errorMessage: string | null;
}

/** One partition's new replica set (null: cancel its reassignment). */
export interface ReassignmentRequest extends TopicPartitionRef {
  replicas: readonly number[] | null;
}

/** What changed, for listeners (changes made through this store and, with etcd, by other brokers). */
export type MetadataChange =
  | { kind: 'topic'; topic: string; change: 'created' | 'deleted' | 'partitions' | 'configs' }
  | { kind: 'partition'; topic: string; partition: number; state: PartitionState }
  | { kind: 'brokers' }
  /** Dynamic broker configs changed (any broker's, or the cluster-wide default). */
  | { kind: 'brokerConfigs' }
  /** SCRAM credentials changed (AlterUserScramCredentials). */
  | { kind: 'scramCredentials' }
  /** A group's dynamic configs changed (ConfigResource type GROUP). */
  | { kind: 'groupConfigs'; group: string }
  /** Client quotas changed (AlterClientQuotas). */
  | { kind: 'clientQuotas' }
  /** ACLs changed (CreateAcls, DeleteAcls). */
  | { kind: 'acls' }
  | { kind: 'controller'; controllerId: number };

export type MetadataListener = (change: MetadataChange) => void;

/** Stable internal codes of the metadata store's failures (they appear in logs; never rename one). */
export const GregorMetadataErrorCode = {
  /** gregor-metadata.json is torn, empty, not JSON, or JSON that is not the store's state. */
  CORRUPT: 'GREGOR_ERR_METADATA_CORRUPT',
  /** gregor-metadata.json is missing from a data dir that holds partition directories. */
  MISSING: 'GREGOR_ERR_METADATA_MISSING',
  /** The data dir belongs to another cluster than cluster.id says. */
  CLUSTER_ID: 'GREGOR_ERR_CLUSTER_ID',
  /** etcd cannot be reached, or answered something the store cannot use. */
  ETCD: 'GREGOR_ERR_ETCD',
  /** Another live broker is registered with this node.id. */
  NODE_ID_IN_USE: 'GREGOR_ERR_NODE_ID_IN_USE',
} as const;
export type GregorMetadataErrorCode = (typeof GregorMetadataErrorCode)[keyof typeof GregorMetadataErrorCode];

/** A metadata store that cannot be opened: the broker must not start on it. The message starts with the code. */
export class MetadataError extends Error {
  readonly code: GregorMetadataErrorCode;
  /** The metadata file (or etcd key prefix) the error is about. */
  readonly file: string;
  constructor(code: GregorMetadataErrorCode, file: string, message: string, options?: { cause?: unknown }) {
    super(`${code}: ${message}`, options);
    this.name = 'MetadataError';
    this.code = code;
    this.file = file;
  }
}

/** A write the store refused; `errorCode` is the Kafka error a request answers with. */
export class MetadataWriteError extends Error {
  readonly errorCode: number;
  constructor(errorCode: number, message: string) {
    super(message);
    this.name = 'MetadataWriteError';
    this.errorCode = errorCode;
  }
}

export interface MetadataStore {
  readonly kind: 'local' | 'etcd';
  readonly clusterId: string;
  readonly nodeId: number;

  topics(): TopicRecord[];
  topic(name: string): TopicRecord | undefined;
  topicById(id: string): TopicRecord | undefined;
  /** The partition's leadership; undefined when the topic or partition does not exist. */
  partitionState(topic: string, partition: number): PartitionState | undefined;
  /** Live brokers, by node id (this one included once registered). */
  brokers(): readonly BrokerInfo[];
  /** The active controller's node id, or -1 when there is none (etcd: between elections). */
  controllerId(): number;

  /**
   * Creates the topic and its partitions' states (replicas placed across live brokers, each partition
   * led by its first replica). Rejects with MetadataWriteError: TOPIC_ALREADY_EXISTS (also when another
   * broker created it first), INVALID_REPLICATION_FACTOR (more replicas than live brokers),
   * INVALID_REPLICA_ASSIGNMENT.
   */
  createTopic(t: NewTopic): Promise<TopicRecord>;
  deleteTopic(name: string): Promise<TopicRecord | undefined>;
  /** Grows the topic to `partitions` (new partitions placed like a creation's). */
  setPartitionCount(name: string, partitions: number): Promise<void>;
  setConfigs(name: string, configs: Record<string, string>): Promise<void>;
  /** Dynamic broker configs of one resource: a broker id, or '' for the cluster-wide default. */
  brokerConfigs(resource: string): Record<string, string>;
  /** Replaces a resource's dynamic broker configs (an empty set removes them). */
  setBrokerConfigs(resource: string, configs: Record<string, string>): Promise<void>;
  /** Dynamic configs of a group (ConfigResource type GROUP: share.*, consumer.*); {} when none. */
  groupConfigs(groupId: string): Record<string, string>;
  /** Replaces a group's dynamic configs (an empty set removes them). */
  setGroupConfigs(groupId: string, configs: Record<string, string>): Promise<void>;
  /** Every user's SCRAM credentials. */
  scramCredentials(): ScramCredentials;
  /** Replaces the SCRAM credentials of each user named, in one write (an empty record removes the user). */
  setScramCredentials(users: ScramCredentials): Promise<void>;
  /** Every client quota entity's quotas (lib/quota/entity.ts: entity key → quota key → value). */
  clientQuotas(): ClientQuotas;
  /** Replaces the quotas of each entity named, in one write (an empty record removes the entity). */
  setClientQuotas(entities: ClientQuotas): Promise<void>;
  /** Every ACL (the authorizer's; lib/security/acl). */
  acls(): readonly AclBinding[];
  /** Adds and removes ACLs in one write (adding one already there, or removing one that is not, does nothing). */
  alterAcls(add: readonly AclBinding[], remove: readonly AclBinding[]): Promise<void>;

  /**
   * The partition's leader changes its ISR (shrink or expand): `leaderEpoch` and `partitionEpoch` must be
   * the current ones. Resolves with the new state; rejects with MetadataWriteError (FENCED_LEADER_EPOCH,
   * INVALID_UPDATE_VERSION when the state moved on, INELIGIBLE_REPLICA, INVALID_REQUEST). One node: never called.
   */
  alterIsr(
    topic: string,
    partition: number,
    req: { leaderEpoch: number; partitionEpoch: number; isr: readonly number[] },
  ): Promise<PartitionState>;
  /**
   * Controlled shutdown (SIGTERM): hands the leadership of every partition this broker leads to another
   * live member of its ISR, leaving this broker out of the ISR, so that clients move before it goes.
   * Resolves with the number of partitions moved once this store's view has them. One node: 0.
   */
  resignLeadership(): Promise<number>;
  /**
   * ElectLeaders: a preferred or unclean election for each partition (null: every partition; those
   * whose election is not needed are then left out of the answer, as Kafka does).
   */
  electLeaders(type: ElectionType, partitions: readonly TopicPartitionRef[] | null): Promise<PartitionResult[]>;
  /** AlterPartitionReassignments: starts (or cancels, replicas null) each partition's reassignment. */
  alterPartitionReassignments(reqs: readonly ReassignmentRequest[]): Promise<PartitionResult[]>;
  /** Registers this broker (after its listeners are bound, so ports are known). */
  register(info: Omit<BrokerInfo, 'brokerEpoch'>): Promise<void>;
  /** Called on every change, after the store's state reflects it. */
  onChange(listener: MetadataListener): void;
  /** Resolves once every write made so far is durable. */
  persisted(): Promise<void>;
  /** Releases what the store holds (etcd: resigns the controllership, revokes the lease, closes the client). */
  close(): Promise<void>;
}
