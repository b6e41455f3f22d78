/**
 * What ties a log dir to its broker: `meta.properties` in every log dir (Kafka's file and keys:
 * version, cluster.id, node.id, directory.id), written at the first start and checked at every
 * start, so that a dir of another cluster or broker listed in `log.dirs` by mistake stops the start
 * instead of being served (or deleted as stray replicas).
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomic } from './checkpoint.js';
import { random16 } from '../random-id.js';

export const META_PROPERTIES = 'meta.properties';
const PARTITION_DIR = /^(.+)-(\d+)$/;

export const LogDirErrorCode = {
  /** A partition has a directory in two log dirs. */
  DUPLICATE: 'GREGOR_ERR_LOG_DIR_DUPLICATE',
  /** A log dir's meta.properties names another cluster or node id, or cannot be read. */
  IDENTITY: 'GREGOR_ERR_LOG_DIR_IDENTITY',
  /** A log dir holds partition directories but no meta.properties (not this broker's). */
  META_MISSING: 'GREGOR_ERR_LOG_DIR_META_MISSING',
} as const;
export type LogDirErrorCode = (typeof LogDirErrorCode)[keyof typeof LogDirErrorCode];

/** A log dir the broker must not start on. The message starts with the code. */
export class LogDirError extends Error {
  readonly code: LogDirErrorCode;
  /** The file or directory the error is about. */
  readonly file: string;
  constructor(code: LogDirErrorCode, file: string, message: string) {
    super(`${code}: ${message}`);
    this.name = 'LogDirError';
    this.code = code;
    this.file = file;
  }
}

/** The `key=value` lines of a properties file (comments and blank lines skipped). */
function parseProperties(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith('!')) continue;
    const eq = line.indexOf('=');
    if (eq > 0) out.set(line.slice(0, eq).trim(), line.slice(eq + 1).trim());
  }
  return out;
}

/** What makes a meta.properties unreadable (bytes no properties file holds, keys missing or not ids), or null. */
function garbledProblem(text: string, cluster: string | undefined, node: string | undefined): string | null {
  // eslint-disable-next-line no-control-regex -- control bytes are what garbling leaves
  if (/[\u0000-\u0008\u000e-\u001f\u007f\ufffd]/.test(text)) return 'it holds bytes that are not text';
  if (cluster === undefined || node === undefined) return 'no cluster.id or node.id';
  if (!/^[\x21-\x7e]+$/.test(cluster)) return `cluster.id ${JSON.stringify(cluster)} is not an id`;
  if (!/^-?\d+$/.test(node)) return `node.id ${JSON.stringify(node)} is not a number`;
  return null;
}

/**
 * Checks the meta.properties of every log dir against this broker's cluster and node id, and writes
 * one where it is missing. The first dir may hold partitions without one (written by a gregor that
 * did not keep it: the metadata store already vouched for that dir); another dir may not.
 */
export async function checkLogDirIdentity(dirs: readonly string[], clusterId: string, nodeId: number): Promise<void> {
  for (const [i, dir] of dirs.entries()) {
    await fsp.mkdir(dir, { recursive: true });
    const file = path.join(dir, META_PROPERTIES);
    let text: string | undefined;
    try {
      text = await fsp.readFile(file, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
    if (text !== undefined) {
      const props = parseProperties(text);
      const [cluster, node] = [props.get('cluster.id'), props.get('node.id') ?? props.get('broker.id')];
      const garbled = garbledProblem(text, cluster, node);
      if (garbled !== null) {
        throw new LogDirError(
          LogDirErrorCode.IDENTITY,
          file,
          `${file} is garbled (${garbled}): it cannot tell whose dir ${dir} is. The broker will not start on it; restore it from a backup, or write it again with this broker's cluster.id=${clusterId} and node.id=${nodeId} if the dir is this broker's (the partition directories beside it are untouched)`,
        );
      }
      if (cluster !== clusterId || Number(node) !== nodeId) {
        throw new LogDirError(
          LogDirErrorCode.IDENTITY,
          file,
          `log dir ${dir} belongs to cluster ${cluster} node ${node} (its ${META_PROPERTIES}), not to cluster ${clusterId} node ${nodeId}`,
        );
      }
      continue;
    }
    if (i > 0) {
      const partitions = (await fsp.readdir(dir)).filter((n) => PARTITION_DIR.test(n));
      if (partitions.length > 0) {
        throw new LogDirError(
          LogDirErrorCode.META_MISSING,
          file,
          `log dir ${dir} holds ${partitions.length} partition directories (${partitions.slice(0, 3).join(', ')}) but no ${META_PROPERTIES}: it is not this broker's`,
        );
      }
    }
    const directoryId = random16().toString('base64url');
    await writeFileAtomic(
      file,
      `#\n#written by gregor\ncluster.id=${clusterId}\ndirectory.id=${directoryId}\nnode.id=${nodeId}\nversion=1\n`,
    );
  }
}
