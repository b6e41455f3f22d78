/**
 * The local store's file, `gregor-metadata.json` in the data dir: its shape, reading it (or refusing
 * it, GREGOR_ERR_METADATA_CORRUPT / _MISSING, touching nothing) and writing it atomically.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic as writeFileAtomicAt } from '../log/checkpoint.js';
import type { AclBinding } from '../security/acl/types.js';
import { invalidTopicName } from './names.js';
import { aclRecords } from './records/acls.js';
import { brokerConfigRecords } from './records/broker-configs.js';
import { clientQuotaRecords } from './records/client-quotas.js';
import { groupConfigRecords } from './records/group-configs.js';
import { isFileRecords, isObject, type RecordKind } from './records/record-map.js';
import { scramRecords } from './records/scram-credentials.js';
import { GregorMetadataErrorCode, MetadataError, type StoredScramCredential, type TopicRecord } from './store.js';

export interface StoredState {
  version: 1;
  clusterId: string;
  nodeId: number;
  topics: TopicRecord[];
  /** Dynamic broker configs by resource ('' the cluster-wide default); absent in files written before them. */
  brokerConfigs?: Record<string, Readonly<Record<string, string>>>;
  /** Dynamic group configs by group id; absent when there are none. */
  groupConfigs?: Record<string, Readonly<Record<string, string>>>;
  /** SCRAM credentials by user then mechanism (salted, never a password); absent when there are none. */
  scramCredentials?: Record<string, Readonly<Record<string, StoredScramCredential>>>;
  /** Client quotas by entity key (lib/quota/entity.ts); absent when there are none. */
  clientQuotas?: Record<string, Readonly<Record<string, number>>>;
  /** ACLs (lib/security/acl); absent when there are none. */
  acls?: AclBinding[];
}

export const FILE = 'gregor-metadata.json';
/** A partition directory (`<topic>-<partition>`), as the log manager names them; `….<hex>-delete` ones are not. */
const PARTITION_DIR = /^(.+)-(\d+)$/;
/** Orphan partition directories named in a GREGOR_ERR_METADATA_MISSING message; the rest are counted. */
const ORPHANS_SHOWN = 5;
/** The keyed records of the file, in the order their fields are checked. */
const RECORD_KINDS: readonly RecordKind<unknown>[] = [brokerConfigRecords, groupConfigRecords, scramRecords, clientQuotaRecords];

/** Writes `dir/name` atomically (tmp → fsync → rename → fsync dir; the tmp file goes when a step fails). */
export function writeFileAtomic(dir: string, name: string, data: string | Buffer): Promise<void> {
  return writeFileAtomicAt(join(dir, name), data);
}

/** The store's state from the file's text, or GREGOR_ERR_METADATA_CORRUPT saying what is wrong with it. */
export function parseState(file: string, text: string): StoredState {
  const corrupt = (what: string, cause?: unknown) =>
    new MetadataError(
      GregorMetadataErrorCode.CORRUPT,
      file,
      `metadata file ${file} is unreadable: ${what}. The broker will not start on it; restore the file from a backup (the partition directories beside it are untouched)`,
      cause === undefined ? undefined : { cause },
    );
  if (text.length === 0) throw corrupt('it is empty (0 bytes)');
  if (/^\0+$/.test(text)) throw corrupt(`it holds only zero bytes (${Buffer.byteLength(text)} bytes)`);
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw corrupt(`not valid JSON, torn or garbled (${Buffer.byteLength(text)} bytes: ${e instanceof Error ? e.message : String(e)})`, e);
  }
  const problem = stateProblem(raw);
  if (problem !== undefined) throw corrupt(problem);
  return raw as StoredState;
}

/** What makes `raw` not a version-1 StoredState, or undefined when it is one. */
function stateProblem(raw: unknown): string | undefined {
  if (!isObject(raw)) return `expected a JSON object, got ${jsonType(raw)}`;
  if (raw['version'] !== 1) return `unsupported version ${JSON.stringify(raw['version'])} (expected 1)`;
  if (typeof raw['clusterId'] !== 'string' || raw['clusterId'] === '') return 'no clusterId';
  if (raw['nodeId'] !== undefined && !Number.isInteger(raw['nodeId'])) return `nodeId is ${JSON.stringify(raw['nodeId'])}, not an integer`;
  for (const kind of RECORD_KINDS) {
    const field = raw[kind.field];
    if (field !== undefined && !isFileRecords(kind, field)) return `invalid ${kind.field}`;
  }
  if (raw[aclRecords.field] !== undefined && !aclRecords.isFileValue(raw[aclRecords.field])) return 'invalid acls';
  const topics = raw['topics'];
  if (!Array.isArray(topics)) return `no topic list (topics is ${jsonType(topics)})`;
  const names = new Set<string>();
  const ids = new Set<string>();
  for (const [i, t] of topics.entries()) {
    const at = `topics[${i}]`;
    if (!isObject(t)) return `${at} is ${jsonType(t)}, not an object`;
    const name = t['name'];
    if (typeof name !== 'string' || invalidTopicName(name) !== undefined) return `${at} has an invalid name ${JSON.stringify(name)}`;
    const id = t['topicId'];
    if (typeof id !== 'string' || !/^[0-9a-f]{32}$/.test(id) || /^0+$/.test(id))
      return `topic ${name} has an invalid topicId ${JSON.stringify(id)}`;
    if (!Number.isInteger(t['partitions']) || (t['partitions'] as number) < 1)
      return `topic ${name} has an invalid partition count ${JSON.stringify(t['partitions'])}`;
    if (!Number.isInteger(t['replicationFactor']))
      return `topic ${name} has an invalid replicationFactor ${JSON.stringify(t['replicationFactor'])}`;
    const configs = t['configs'];
    if (!isObject(configs) || Object.values(configs).some((v) => typeof v !== 'string')) return `topic ${name} has invalid configs`;
    if (typeof t['internal'] !== 'boolean') return `topic ${name} has no internal flag`;
    if (names.has(name)) return `topic ${name} is listed twice`;
    if (ids.has(id)) return `topicId ${id} is listed twice`;
    names.add(name);
    ids.add(id);
  }
  return undefined;
}

function jsonType(v: unknown): string {
  if (v === undefined) return 'missing';
  if (v === null) return 'null';
  return Array.isArray(v) ? 'an array' : `a ${typeof v}`;
}

/** Partition directories (`<topic>-<partition>`) in the data dir, sorted. */
export async function partitionDirs(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const ent of await readdir(dir, { withFileTypes: true })) {
    if (!ent.isDirectory()) continue;
    const m = PARTITION_DIR.exec(ent.name);
    if (m !== null && invalidTopicName(m[1] ?? '') === undefined) out.push(ent.name);
  }
  return out.sort();
}

export function missingError(dir: string, file: string, orphans: readonly string[]): MetadataError {
  const shown = orphans.slice(0, ORPHANS_SHOWN).join(', ');
  const more = orphans.length > ORPHANS_SHOWN ? ` and ${orphans.length - ORPHANS_SHOWN} more` : '';
  return new MetadataError(
    GregorMetadataErrorCode.MISSING,
    file,
    `data dir ${dir} has ${orphans.length} partition director${orphans.length === 1 ? 'y' : 'ies'} (${shown}${more}) but no ${FILE}: ` +
      'without it the topics, their ids and configs are unknown, so the broker will not start and serve the data dir as empty. ' +
      `Restore ${file} from a backup, or, to start a new cluster here, move the partition directories out of ${dir}`,
  );
}
