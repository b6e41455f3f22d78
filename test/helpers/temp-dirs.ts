/**
 * Temporary directories for tests and benchmarks, removed when the process exits. Suites remove
 * their own dirs when they finish; this is the backstop for the ones that fail part-way or forget,
 * so repeated runs do not pile `gregor-*` dirs up in the system temp dir. Removal happens in the
 * 'exit' handler (synchronous), after mocha's --exit, once every suite has stopped its brokers.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const created = new Set<string>();
let hooked = false;

function removeAll(): void {
  for (const dir of created) {
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // a mount point or a busy dir: nothing more to do at exit
    }
  }
  created.clear();
}

/** A fresh directory under the system temp dir, named `<prefix>XXXXXX`, removed at process exit. */
export function makeTempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  created.add(dir);
  if (!hooked) {
    hooked = true;
    process.on('exit', removeAll);
  }
  return dir;
}

/** Dirs made by makeTempDir and not yet removed (for the test of this helper). */
export function pendingTempDirs(): readonly string[] {
  return [...created];
}
