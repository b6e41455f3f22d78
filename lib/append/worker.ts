/** An append worker thread: runs conversion jobs (lib/append/jobs.ts) one at a time. */
import { parentPort } from 'node:worker_threads';
import { runJob } from './jobs.js';
import type { JobMessage } from './jobs.js';

const port = parentPort;
if (port === null) throw new Error('lib/append/worker.js must run in a worker thread');
port.on('message', (job: JobMessage) => {
  const { result, transfer } = runJob(job);
  port.postMessage(result, transfer);
});
