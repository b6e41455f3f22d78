/**
 * A storage fault layer for power-loss tests, loaded into a broker with
 * `NODE_OPTIONS=--import <this file>` (worker threads inherit it). With GREGOR_FS_JOURNAL set it
 * wraps the `fs` calls gregor makes for durable state (open, write, writev, fsync, fdatasync,
 * ftruncate, rename, rm, mkdir, and FileHandle's write/writeFile/sync/datasync/truncate) and appends
 * one JSON line per operation under GREGOR_FS_JOURNAL_ROOT to the journal, synchronously, so the
 * journal survives kill -9 and orders every operation before whatever its completion triggers (a
 * Produce response included). Without GREGOR_FS_JOURNAL it does nothing: production never loads it.
 *
 * Entries (see crash-image.ts for what each means on a power loss): `open` (path, ino, whether it
 * created or truncated the file), `write` (ino, pos, base64 data), `trunc` (ino, len), `sync0` /
 * `sync1` (start and end of an fsync or fdatasync of ino, `dir` when ino is a directory), `rename`,
 * `rm`, `mkdir`. Positions are known at completion (an append handle's is its size minus the bytes
 * written). Writes and truncates are journaled when they complete, an fsync both when it starts
 * (what it covers: everything completed before) and when it ends (from then on it is durable).
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import { syncBuiltinESMExports } from 'node:module';
import path from 'node:path';

const journalPath = process.env['GREGOR_FS_JOURNAL'];
const rootEnv = process.env['GREGOR_FS_JOURNAL_ROOT'];

type Cb = (err: NodeJS.ErrnoException | null, ...rest: unknown[]) => void;
type AnyFn = (...args: unknown[]) => unknown;

if (journalPath !== undefined && rootEnv !== undefined) install(journalPath, path.resolve(rootEnv));

function install(journal: string, root: string): void {
  const o = {
    openSync: fs.openSync,
    writeSync: fs.writeSync,
    fstatSync: fs.fstatSync,
    existsSync: fs.existsSync,
  };
  const out = o.openSync(journal, 'a');
  let seq = 0;
  const emit = (e: Record<string, unknown>): void => {
    const line = `${JSON.stringify({ t: process.pid, n: seq++, ...e })}\n`;
    o.writeSync(out, line);
  };
  const under = (p: string): string | null => {
    const abs = path.resolve(p);
    return abs === root || abs.startsWith(root + path.sep) ? path.relative(root, abs) : null;
  };
  /** fd → what the journal knows of it; only fds of files under the root are here. */
  const fds = new Map<number, { rel: string; ino: number; dir: boolean; append: boolean }>();
  const creates = (flags: unknown): { create: boolean; trunc: boolean; append: boolean } => {
    if (typeof flags === 'number') {
      const c = fs.constants;
      return { create: (flags & c.O_CREAT) !== 0, trunc: (flags & c.O_TRUNC) !== 0, append: (flags & c.O_APPEND) !== 0 };
    }
    const f = typeof flags === 'string' ? flags : 'r';
    return { create: /[wa]/.test(f), trunc: f.includes('w'), append: f.includes('a') };
  };
  const opened = (p: string, flags: unknown, existed: boolean, fd: number): void => {
    const rel = under(p);
    if (rel === null) return;
    const st = o.fstatSync(fd);
    const f = creates(flags);
    fds.set(fd, { rel, ino: st.ino, dir: st.isDirectory(), append: f.append });
    emit({ op: 'open', path: rel, ino: st.ino, dir: st.isDirectory(), created: f.create && !existed, trunc: f.trunc });
  };
  const wrote = (fd: number, pos: number | null, bufs: readonly Uint8Array[], bytes: number): void => {
    const info = fds.get(fd);
    if (info === undefined || bytes <= 0) return;
    const data = Buffer.concat(bufs.map((b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength))).subarray(0, bytes);
    const at = info.append || pos === null ? o.fstatSync(fd).size - bytes : pos;
    emit({ op: 'write', ino: info.ino, pos: at, data: data.toString('base64') });
  };
  const syncStart = (fd: number): number | null => {
    const info = fds.get(fd);
    if (info === undefined) return null;
    const id = seq;
    emit({ op: 'sync0', ino: info.ino, dir: info.dir, path: info.rel, id });
    return id;
  };
  const syncEnd = (fd: number, id: number | null): void => {
    const info = fds.get(fd);
    if (info !== undefined && id !== null) emit({ op: 'sync1', ino: info.ino, dir: info.dir, path: info.rel, id });
  };
  /** Paths that do not exist yet among `p` and its ancestors below the root, outermost first. */
  const missing = (p: string): string[] => {
    const list: string[] = [];
    for (let cur = path.resolve(p); under(cur) !== null && under(cur) !== '' && !o.existsSync(cur); cur = path.dirname(cur)) {
      list.unshift(under(cur) as string);
    }
    return list;
  };

  const F = fs as unknown as Record<string, AnyFn>;
  const P = fsp as unknown as Record<string, AnyFn>;
  const wrapCb = (
    name: string,
    before: (args: unknown[]) => unknown,
    after: (args: unknown[], state: unknown, rest: unknown[]) => void,
  ): void => {
    const orig = F[name] as AnyFn;
    F[name] = function (this: unknown, ...args: unknown[]) {
      const cb = args[args.length - 1];
      if (typeof cb !== 'function') return orig.apply(this, args);
      const state = before(args);
      args[args.length - 1] = (err: NodeJS.ErrnoException | null, ...rest: unknown[]) => {
        if (err === null) after(args, state, rest);
        (cb as Cb)(err, ...rest);
      };
      return orig.apply(this, args);
    };
  };
  const wrapSync = (
    name: string,
    before: (args: unknown[]) => unknown,
    after: (args: unknown[], state: unknown, ret: unknown) => void,
  ): void => {
    const orig = F[name] as AnyFn;
    F[name] = function (this: unknown, ...args: unknown[]) {
      const state = before(args);
      const ret = orig.apply(this, args);
      after(args, state, ret);
      return ret;
    };
  };
  const wrapP = (
    name: string,
    before: (args: unknown[]) => unknown,
    after: (args: unknown[], state: unknown, ret: unknown) => void,
  ): void => {
    const orig = P[name] as AnyFn;
    P[name] = async function (this: unknown, ...args: unknown[]) {
      const state = before(args);
      const ret = await (orig.apply(this, args) as Promise<unknown>);
      after(args, state, ret);
      return ret;
    };
  };
  const existedBefore = (args: unknown[]): boolean => o.existsSync(String(args[0]));
  const fdOf = (args: unknown[]): number => args[0] as number;
  const bufArgs = (args: unknown[]): { bufs: Uint8Array[]; pos: number | null } => {
    // write(fd, buffer, offset?, length?, position?) | write(fd, string, position?, encoding?)
    const b = args[1];
    if (typeof b === 'string') return { bufs: [Buffer.from(b)], pos: typeof args[2] === 'number' ? args[2] : null };
    const u = b as Uint8Array;
    const off = typeof args[2] === 'number' ? args[2] : 0;
    const len = typeof args[3] === 'number' ? args[3] : u.byteLength - off;
    return { bufs: [u.subarray(off, off + len)], pos: typeof args[4] === 'number' ? args[4] : null };
  };

  wrapSync('openSync', existedBefore, (args, existed, fd) => opened(String(args[0]), args[1], existed as boolean, fd as number));
  wrapCb('open', existedBefore, (args, existed, rest) => opened(String(args[0]), args[1], existed as boolean, rest[0] as number));
  wrapSync(
    'closeSync',
    () => null,
    (args) => fds.delete(fdOf(args)),
  );
  wrapCb(
    'close',
    (args) => fds.delete(fdOf(args)),
    () => undefined,
  );
  const vecArgs = (args: unknown[]): { bufs: Uint8Array[]; pos: number | null } => ({
    bufs: args[1] as Uint8Array[],
    pos: typeof args[2] === 'number' ? args[2] : null,
  });
  for (const [name, parse] of [
    ['write', bufArgs],
    ['writev', vecArgs],
  ] as const) {
    const done = (args: unknown[], s: unknown, n: unknown): void => {
      const { bufs, pos } = s as ReturnType<typeof parse>;
      wrote(fdOf(args), pos, bufs, n as number);
    };
    wrapSync(`${name}Sync`, parse, done);
    wrapCb(name, parse, (args, s, rest) => done(args, s, rest[0]));
  }
  for (const name of ['fsync', 'fdatasync']) {
    wrapCb(
      name,
      (args) => syncStart(fdOf(args)),
      (args, id) => syncEnd(fdOf(args), id as number | null),
    );
    wrapSync(
      `${name}Sync`,
      (args) => syncStart(fdOf(args)),
      (args, id) => syncEnd(fdOf(args), id as number | null),
    );
  }
  const truncated = (fd: number, len: unknown): void => {
    const info = fds.get(fd);
    if (info !== undefined) emit({ op: 'trunc', ino: info.ino, len: typeof len === 'number' ? len : 0 });
  };
  wrapCb(
    'ftruncate',
    () => null,
    (args) => truncated(fdOf(args), args[1]),
  );
  wrapSync(
    'ftruncateSync',
    () => null,
    (args) => truncated(fdOf(args), args[1]),
  );
  const renamed = (args: unknown[]): void => {
    const from = under(String(args[0]));
    const to = under(String(args[1]));
    if (from !== null && to !== null) emit({ op: 'rename', from, to });
  };
  wrapSync('renameSync', () => null, renamed);
  wrapP('rename', () => null, renamed);
  const removed = (args: unknown[], existed: unknown): void => {
    const rel = under(String(args[0]));
    if (rel !== null && existed === true) emit({ op: 'rm', path: rel });
  };
  for (const name of ['rmSync', 'unlinkSync', 'rmdirSync']) wrapSync(name, existedBefore, removed);
  for (const name of ['rm', 'unlink', 'rmdir']) wrapP(name, existedBefore, removed);
  const made = (_args: unknown[], list: unknown): void => {
    for (const rel of list as string[]) emit({ op: 'mkdir', path: rel });
  };
  wrapSync('mkdirSync', (args) => missing(String(args[0])), made);
  wrapP('mkdir', (args) => missing(String(args[0])), made);

  // fs.promises.open → a FileHandle, whose methods live on one prototype
  const pOpen = P['open'] as AnyFn;
  P['open'] = async function (this: unknown, ...args: unknown[]) {
    const existed = o.existsSync(String(args[0]));
    const fh = await (pOpen.apply(this, args) as Promise<fsp.FileHandle>);
    opened(String(args[0]), args[1], existed, fh.fd);
    return fh;
  };
  wrapHandle(journal, {
    wrote,
    syncStart,
    syncEnd,
    truncated,
    forget: (fd) => fds.delete(fd),
  });
  syncBuiltinESMExports();
}

interface HandleHooks {
  wrote(fd: number, pos: number | null, bufs: readonly Uint8Array[], bytes: number): void;
  syncStart(fd: number): number | null;
  syncEnd(fd: number, id: number | null): void;
  truncated(fd: number, len: unknown): void;
  forget(fd: number): void;
}

/** Wraps FileHandle.prototype, found from the first handle fs.promises.open gives (before it is returned). */
function wrapHandle(_journal: string, h: HandleHooks): void {
  let done = false;
  const P = fsp as unknown as Record<string, AnyFn>;
  const open = P['open'] as AnyFn;
  P['open'] = async function (this: unknown, ...args: unknown[]) {
    const fh = await (open.apply(this, args) as Promise<fsp.FileHandle>);
    if (!done) {
      done = true;
      patchProto(Object.getPrototypeOf(fh) as Record<string, AnyFn>, h);
    }
    return fh;
  };
}

function patchProto(proto: Record<string, AnyFn>, h: HandleHooks): void {
  const w = proto['write'] as AnyFn;
  proto['write'] = async function (this: fsp.FileHandle, ...args: unknown[]) {
    const fd = this.fd;
    const b = args[0];
    const r = (await (w.apply(this, args) as Promise<{ bytesWritten: number }>)) as { bytesWritten: number; buffer: unknown };
    if (typeof b === 'string') h.wrote(fd, typeof args[1] === 'number' ? args[1] : null, [Buffer.from(b)], r.bytesWritten);
    else {
      const u = b as Uint8Array;
      const off = typeof args[1] === 'number' ? args[1] : 0;
      const len = typeof args[2] === 'number' ? args[2] : u.byteLength - off;
      h.wrote(fd, typeof args[3] === 'number' ? args[3] : null, [u.subarray(off, off + len)], r.bytesWritten);
    }
    return r;
  };
  const wf = proto['writeFile'] as AnyFn;
  proto['writeFile'] = async function (this: fsp.FileHandle, ...args: unknown[]) {
    const fd = this.fd;
    const d = args[0];
    const buf = typeof d === 'string' ? Buffer.from(d) : Buffer.from(d as Uint8Array);
    await (wf.apply(this, args) as Promise<void>);
    h.wrote(fd, 0, [buf], buf.length);
  };
  for (const name of ['sync', 'datasync']) {
    const s = proto[name] as AnyFn;
    proto[name] = async function (this: fsp.FileHandle) {
      const fd = this.fd;
      const id = h.syncStart(fd);
      await (s.apply(this, []) as Promise<void>);
      h.syncEnd(fd, id);
    };
  }
  const t = proto['truncate'] as AnyFn;
  proto['truncate'] = async function (this: fsp.FileHandle, ...args: unknown[]) {
    const fd = this.fd;
    await (t.apply(this, args) as Promise<void>);
    h.truncated(fd, args[0]);
  };
  const c = proto['close'] as AnyFn;
  proto['close'] = function (this: fsp.FileHandle) {
    h.forget(this.fd);
    return c.apply(this, []);
  };
}
