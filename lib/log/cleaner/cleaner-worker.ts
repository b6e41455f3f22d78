/** A log cleaner thread: runs cleaning jobs (clean.ts) one at a time, each over an offset map of the job's size. */
import os from 'node:os';
import { parentPort } from 'node:worker_threads';
import { LogError } from '../errors.js';
import { cleanLog } from './clean.js';
import type { CleanJob } from './job.js';
import { OffsetMap } from './offset-map.js';

const port = parentPort;
if (port === null) throw new Error('lib/log/cleaner/cleaner-worker.js must run in a worker thread');
// Linux nice values are per thread, and setpriority(2) with who=0 (what os.setPriority does here) names
// the calling thread: the cleaner yields the CPU to the request path when cores are short
try {
  os.setPriority(19);
} catch {
  // not permitted, or not Linux: the cleaner runs at the broker's priority
}
port.on('message', (msg: { id: number; job: CleanJob }) => {
  try {
    port.postMessage({ id: msg.id, ok: true, result: cleanLog(msg.job, new OffsetMap(msg.job.mapBytes, msg.job.loadFactor)) });
  } catch (err) {
    const e = err as Error;
    port.postMessage({
      id: msg.id,
      ok: false,
      message: e.message,
      code: err instanceof LogError ? err.code : null,
      errorCode: err instanceof LogError ? err.errorCode : -1,
    });
  }
});
