import { randomBytes } from 'node:crypto';
import { closeSync, openSync, readSync } from 'node:fs';

/**
 * 16 random bytes from the kernel (/dev/urandom, what crypto's randomBytes draws from too), read directly:
 * a broker's first start names its cluster and its log dirs, and loading node:crypto for that costs the
 * start ~5-10 ms (issue 14). Falls back to crypto where /dev/urandom cannot be read.
 */
export function random16(): Buffer {
  const bytes = Buffer.alloc(16);
  try {
    const fd = openSync('/dev/urandom', 'r');
    try {
      if (readSync(fd, bytes, 0, 16, null) === 16) return bytes;
    } finally {
      closeSync(fd);
    }
  } catch {
    // no /dev/urandom (another OS, a sandbox): crypto below
  }
  return randomBytes(16);
}
