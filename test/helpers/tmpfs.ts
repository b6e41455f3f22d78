/**
 * A small tmpfs for full-disk tests (mount needs root, which these tests run as; elsewhere the
 * caller skips, saying why). Unmount it in after(); a busy mount is detached lazily.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface Tmpfs {
  dir: string;
  unmount(): void;
}

/** Mounts a tmpfs of `bytes` (rounded up to pages) on a new directory; a string says why it could not. */
export function mountTmpfs(bytes: number, prefix = 'gregor-tmpfs-'): Tmpfs | string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${Math.ceil(bytes / 1024)}k`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (err) {
    fs.rmSync(dir, { recursive: true, force: true });
    const out = (err as { stderr?: Buffer }).stderr?.toString().trim() ?? '';
    return `cannot mount a tmpfs (needs root or CAP_SYS_ADMIN): ${out || (err as Error).message}`;
  }
  return {
    dir,
    unmount() {
      try {
        execFileSync('umount', [dir], { stdio: 'pipe' });
      } catch {
        execFileSync('umount', ['-l', dir], { stdio: 'pipe' });
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Bytes still free on the file system holding `dir`. */
export function freeBytes(dir: string): number {
  const s = fs.statfsSync(dir);
  return s.bavail * s.bsize;
}

/** Fills the file system holding `dir` with one file, leaving about `leave` bytes free; returns its path. */
export function fillUp(dir: string, leave: number, name = 'filler.bin'): string {
  const file = path.join(dir, name);
  const fd = fs.openSync(file, 'w');
  try {
    const chunk = Buffer.alloc(64 * 1024, 0x5a);
    for (let left = freeBytes(dir) - leave; left > 0; left -= chunk.length) {
      try {
        fs.writeSync(fd, chunk, 0, Math.min(chunk.length, left));
      } catch {
        break;
      }
    }
  } finally {
    fs.closeSync(fd);
  }
  return file;
}
