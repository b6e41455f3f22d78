/**
 * Power-loss images from a journal written by fs-journal-preload.ts. A Replay applies the journal's
 * entries in order to a model of the file system under the journaled root (which starts empty and
 * durable) and can, at any point, write out what a power loss there would leave:
 *
 * - `synced`: POSIX's promise and nothing more. A file's content (and size) is what it was when the
 *   last fsync/fdatasync of it that has *completed* began; a name (create, rename, unlink, mkdir) is
 *   what its directory held when the last completed fsync of that directory began. A file whose name
 *   survives but whose data never was fsynced is empty.
 * - `prefix`: a disk that wrote back more than was asked: every name as last set (ext4 commits its
 *   metadata journal every few seconds), each file's synced content plus a random prefix of its
 *   later writes and truncates in order, the last write torn at a random byte.
 */
import fs from 'node:fs';
import path from 'node:path';

export interface JournalEntry {
  op: string;
  [k: string]: unknown;
}

export function readJournal(file: string): JournalEntry[] {
  const text = fs.readFileSync(file, 'utf8');
  const out: JournalEntry[] = [];
  for (const line of text.split('\n')) if (line !== '') out.push(JSON.parse(line) as JournalEntry);
  return out;
}

/** Appends a marker (an acknowledgement seen by a client, ...) to the journal, after everything the broker journaled before it. */
export function markJournal(file: string, entry: JournalEntry): void {
  fs.appendFileSync(file, `${JSON.stringify(entry)}\n`);
}

type FileOp = { idx: number; write: Buffer; pos: number } | { idx: number; trunc: number };

interface FileNode {
  kind: 'file';
  data: Buffer;
  durable: Buffer;
  /** journal index of the sync start whose snapshot `durable` is (-1: none) */
  durableAt: number;
  ops: FileOp[];
}

interface DirNode {
  kind: 'dir';
  entries: Map<string, Node>;
  durable: Map<string, Node>;
}

type Node = FileNode | DirNode;

const newFile = (): FileNode => ({ kind: 'file', data: Buffer.alloc(0), durable: Buffer.alloc(0), durableAt: -1, ops: [] });
const newDir = (): DirNode => ({ kind: 'dir', entries: new Map(), durable: new Map() });

function applyOp(data: Buffer, op: FileOp): Buffer {
  if ('trunc' in op)
    return op.trunc <= data.length ? Buffer.from(data.subarray(0, op.trunc)) : Buffer.concat([data, Buffer.alloc(op.trunc - data.length)]);
  const end = op.pos + op.write.length;
  const out = end > data.length ? Buffer.concat([data, Buffer.alloc(end - data.length)]) : Buffer.from(data);
  op.write.copy(out, op.pos);
  return out;
}

export type ImageMode = 'synced' | 'prefix';

export class Replay {
  private readonly root = newDir();
  private readonly inodes = new Map<number, Node>();
  private readonly pending = new Map<number, { node: Node; file?: Buffer; at: number; dir?: Map<string, Node> }>();
  /** entries applied so far: the crash point an image now stands for */
  applied = 0;

  private lookup(rel: string): { parent: DirNode; name: string; node: Node | undefined } | null {
    const parts = rel === '' ? [] : rel.split(path.sep);
    let dir = this.root;
    for (const p of parts.slice(0, -1)) {
      const next = dir.entries.get(p);
      if (next === undefined || next.kind !== 'dir') return null;
      dir = next;
    }
    const name = parts[parts.length - 1] ?? '';
    return { parent: dir, name, node: name === '' ? this.root : dir.entries.get(name) };
  }

  apply(e: JournalEntry): void {
    const idx = this.applied++;
    switch (e.op) {
      case 'open': {
        const at = this.lookup(e['path'] as string);
        if (at === null) return;
        let node = at.node;
        if (node === undefined) {
          node = e['dir'] === true ? newDir() : newFile();
          at.parent.entries.set(at.name, node);
        }
        this.inodes.set(e['ino'] as number, node);
        if (node.kind === 'file' && e['trunc'] === true && node.data.length > 0) this.fileOp(node, { idx, trunc: 0 });
        return;
      }
      case 'write':
      case 'trunc': {
        const node = this.inodes.get(e['ino'] as number);
        if (node?.kind !== 'file') return;
        if (e.op === 'write') this.fileOp(node, { idx, pos: e['pos'] as number, write: Buffer.from(e['data'] as string, 'base64') });
        else this.fileOp(node, { idx, trunc: e['len'] as number });
        return;
      }
      case 'sync0': {
        const node = this.inodes.get(e['ino'] as number);
        if (node === undefined) return;
        if (node.kind === 'file') this.pending.set(e['id'] as number, { node, file: node.data, at: idx });
        else this.pending.set(e['id'] as number, { node, dir: new Map(node.entries), at: idx });
        return;
      }
      case 'sync1': {
        const p = this.pending.get(e['id'] as number);
        this.pending.delete(e['id'] as number);
        if (p === undefined) return;
        if (p.node.kind === 'file' && p.file !== undefined && p.at > p.node.durableAt) {
          p.node.durable = p.file;
          p.node.durableAt = p.at;
        } else if (p.node.kind === 'dir' && p.dir !== undefined) p.node.durable = p.dir;
        return;
      }
      case 'rename': {
        const from = this.lookup(e['from'] as string);
        const to = this.lookup(e['to'] as string);
        if (from?.node === undefined || to === null) return;
        from.parent.entries.delete(from.name);
        to.parent.entries.set(to.name, from.node);
        return;
      }
      case 'rm': {
        const at = this.lookup(e['path'] as string);
        if (at?.node !== undefined && at.name !== '') at.parent.entries.delete(at.name);
        return;
      }
      case 'mkdir': {
        const at = this.lookup(e['path'] as string);
        if (at !== null && at.node === undefined) at.parent.entries.set(at.name, newDir());
        return;
      }
      default:
      // markers written by the test (acks, commits): nothing on disk
    }
  }

  private fileOp(node: FileNode, op: FileOp): void {
    node.data = applyOp(node.data, op);
    node.ops.push(op);
  }

  /** Writes the image of a power loss now into `dir` (made if needed); `rand` in [0, 1) picks the prefixes. */
  materialize(dir: string, mode: ImageMode, rand: () => number = Math.random): void {
    fs.mkdirSync(dir, { recursive: true });
    const walk = (node: DirNode, at: string): void => {
      for (const [name, child] of mode === 'synced' ? node.durable : node.entries) {
        const p = path.join(at, name);
        if (child.kind === 'dir') {
          fs.mkdirSync(p);
          walk(child, p);
        } else fs.writeFileSync(p, mode === 'synced' ? child.durable : prefixOf(child, rand));
      }
    };
    walk(this.root, dir);
  }
}

function prefixOf(node: FileNode, rand: () => number): Buffer {
  const later = node.ops.filter((op) => op.idx > node.durableAt);
  const keep = Math.floor(rand() * (later.length + 1));
  let data = node.durable;
  for (let i = 0; i < keep; i++) {
    const op = later[i] as FileOp;
    if (i === keep - 1 && 'write' in op) {
      data = applyOp(data, { idx: op.idx, pos: op.pos, write: op.write.subarray(0, 1 + Math.floor(rand() * op.write.length)) });
    } else data = applyOp(data, op);
  }
  return data;
}
