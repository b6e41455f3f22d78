/**
 * compat/bench/proc-stats.ts: BENCH_PIN's parsing, and pinning a real process to one CPU with taskset
 * (what `BENCH_PIN=1 npm run bench` does to each broker and to the clients).
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { expect } from 'chai';
import { allowedCpus, parsePinning, pinProcess } from '../../compat/bench/proc-stats.js';

describe('bench pinning (BENCH_PIN)', () => {
  it('reads off, 1 and BROKER:CLIENT, and refuses the same CPU twice, CPUs the machine lacks and other text', () => {
    expect(parsePinning(undefined, 2)).to.equal(null);
    expect(parsePinning('', 2)).to.equal(null);
    expect(parsePinning('0', 2)).to.equal(null);
    expect(parsePinning('1', 2)).to.deep.equal({ brokerCpu: 0, clientCpu: 1 });
    expect(parsePinning('3:1', 4)).to.deep.equal({ brokerCpu: 3, clientCpu: 1 });
    expect(() => parsePinning('1:1', 4)).to.throw(/different CPUs/);
    expect(() => parsePinning('0:2', 2)).to.throw(/CPUs 0-1/);
    expect(() => parsePinning('1', 1)).to.throw(/CPUs 0-0/);
    expect(() => parsePinning('yes', 2)).to.throw(/expected 1 or BROKER_CPU:CLIENT_CPU/);
  });

  it('binds every thread of a running process to the CPU given', async function () {
    if (availableParallelism() < 2) {
      // one CPU: there is nothing to choose between, and the bench refuses BENCH_PIN there anyway
      this.skip();
    }
    // a process with threads of its own (Node's platform workers), idle until killed
    const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    try {
      await new Promise<void>((resolve, reject) => {
        child.once('spawn', resolve);
        child.once('error', reject);
      });
      const pid = child.pid as number;
      // pin once its threads are running, so the binding has to reach threads that already exist
      const deadline = Date.now() + 5000;
      while (readdirSync(`/proc/${pid}/task`).length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      pinProcess(pid, 1);
      expect(allowedCpus(pid)).to.equal('1');
      pinProcess(pid, 0);
      expect(allowedCpus(pid)).to.equal('0');
      // every thread, not just the main one
      const lists = readdirSync(`/proc/${pid}/task`).map(
        (tid) => /Cpus_allowed_list:\s*(\S+)/.exec(readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8'))?.[1],
      );
      expect(lists.length).to.be.greaterThan(1);
      expect(new Set(lists)).to.deep.equal(new Set(['0']));
    } finally {
      child.kill('SIGKILL');
    }
  });
});
