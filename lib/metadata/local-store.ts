/**
 * Single-node metadata: the cluster id and the topics (id, partition count, per-topic configs), kept in
 * memory and persisted atomically (tmp → fsync → rename → fsync dir) in the data dir. Mutations are
 * synchronous; persistence is queued and coalesced, and `persisted()` waits for it.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';

export interface TopicRecord {
  name: string;
  /** 32 lowercase hex digits; never all zero. */
  topicId: string;
  partitions: number;
  replicationFactor: number;
  configs: Record<string, string>;
  internal: boolean;
}

interface StoredState {
  version: 1;
  clusterId: string;
  nodeId: number;
  topics: TopicRecord[];
}

const FILE = 'gregor-metadata.json';
const LEGAL_TOPIC = /^[a-zA-Z0-9._-]+$/;
export const MAX_TOPIC_NAME_LENGTH = 249;

export function newTopicId(): string {
  let id = '';
  do id = randomBytes(16).toString('hex');
  while (/^0+$/.test(id));
  return id;
}

/** Kafka's cluster ids: 16 random bytes, URL-safe base64 without padding (22 chars). */
export function newClusterId(): string {
  return randomBytes(16).toString('base64url');
}

/** Returns why a topic name is invalid, or undefined when it is valid (Kafka's Topic.validate). */
export function invalidTopicName(name: string): string | undefined {
  if (name.length === 0) return 'Topic name is empty';
  if (name === '.' || name === '..') return `Topic name cannot be "${name}"`;
  if (name.length > MAX_TOPIC_NAME_LENGTH) return `Topic name is longer than ${MAX_TOPIC_NAME_LENGTH} characters`;
  if (!LEGAL_TOPIC.test(name)) return `Topic name "${name}" contains characters other than ASCII alphanumerics, '.', '_' and '-'`;
  return undefined;
}

export async function writeFileAtomic(dir: string, name: string, data: string | Buffer): Promise<void> {
  const tmp = join(dir, `${name}.tmp`);
  const fh = await open(tmp, 'w');
  try {
    await fh.writeFile(data);
    await fh.sync();
  } finally {
    await fh.close();
  }
  await rename(tmp, join(dir, name));
  const d = await open(dir, 'r');
  try {
    await d.sync();
  } finally {
    await d.close();
  }
}

export class LocalMetadataStore {
  readonly dir: string;
  readonly clusterId: string;
  readonly nodeId: number;
  private readonly byName = new Map<string, TopicRecord>();
  private readonly byId = new Map<string, TopicRecord>();
  private writing: Promise<void> = Promise.resolve();
  private dirty = false;

  private constructor(dir: string, state: StoredState) {
    this.dir = dir;
    this.clusterId = state.clusterId;
    this.nodeId = state.nodeId;
    for (const t of state.topics) this.index(t);
  }

  static async open(dir: string, opts: { nodeId: number; clusterId?: string | null }): Promise<LocalMetadataStore> {
    await mkdir(dir, { recursive: true });
    let state: StoredState;
    try {
      state = JSON.parse(await readFile(join(dir, FILE), 'utf8')) as StoredState;
      if (opts.clusterId != null && opts.clusterId !== state.clusterId) {
        throw new Error(`GREGOR_ERR_CLUSTER_ID: data dir ${dir} belongs to cluster ${state.clusterId}, not ${opts.clusterId}`);
      }
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      state = { version: 1, clusterId: opts.clusterId ?? newClusterId(), nodeId: opts.nodeId, topics: [] };
    }
    const store = new LocalMetadataStore(dir, { ...state, nodeId: opts.nodeId });
    store.markDirty();
    await store.persisted();
    return store;
  }

  private index(t: TopicRecord): void {
    this.byName.set(t.name, t);
    this.byId.set(t.topicId, t);
  }

  topics(): TopicRecord[] {
    return [...this.byName.values()];
  }

  topic(name: string): TopicRecord | undefined {
    return this.byName.get(name);
  }

  topicById(id: string): TopicRecord | undefined {
    return this.byId.get(id);
  }

  createTopic(t: Omit<TopicRecord, 'topicId'> & { topicId?: string }): TopicRecord {
    if (this.byName.has(t.name)) throw new Error(`topic ${t.name} exists`);
    const rec: TopicRecord = { ...t, topicId: t.topicId ?? newTopicId() };
    this.index(rec);
    this.markDirty();
    return rec;
  }

  deleteTopic(name: string): TopicRecord | undefined {
    const t = this.byName.get(name);
    if (t === undefined) return undefined;
    this.byName.delete(name);
    this.byId.delete(t.topicId);
    this.markDirty();
    return t;
  }

  setPartitionCount(name: string, partitions: number): void {
    const t = this.byName.get(name);
    if (t === undefined) throw new Error(`no topic ${name}`);
    t.partitions = partitions;
    this.markDirty();
  }

  setConfigs(name: string, configs: Record<string, string>): void {
    const t = this.byName.get(name);
    if (t === undefined) throw new Error(`no topic ${name}`);
    t.configs = configs;
    this.markDirty();
  }

  private markDirty(): void {
    if (this.dirty) return;
    this.dirty = true;
    this.writing = this.writing.then(async () => {
      this.dirty = false;
      const state: StoredState = { version: 1, clusterId: this.clusterId, nodeId: this.nodeId, topics: this.topics() };
      await writeFileAtomic(this.dir, FILE, JSON.stringify(state, null, 1));
    });
  }

  /** Resolves once every mutation made so far is on disk. */
  persisted(): Promise<void> {
    return this.writing;
  }
}
