/**
 * The KAFKA-200 benchmark's process and namespace plumbing (kafka-200.ts): shell calls, the
 * delay-line teardown, child processes started until a ready line, and `ss` socket samples inside a
 * network namespace.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { join } from 'node:path';
import { sh } from '../lib/netns.js';
import { ROOT_DIR } from './proc-stats.js';

export function teardown(prefix: string): void {
  try {
    execFileSync('bash', [join(ROOT_DIR, 'compat/bench/delay-line/teardown.sh'), prefix], { stdio: 'ignore' });
  } catch {
    // best effort
  }
}

/** Spawns a process and resolves once its stdout matches `ready` (rejects on exit or timeout). */
export function spawnUntil(
  cmd: string,
  args: string[],
  ready: RegExp,
  timeoutMs: number,
): Promise<{ child: ChildProcess; out: () => string; err: () => string; exited: Promise<number | null> }> {
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LOG_LEVEL: 'info' } });
  let out = '';
  let err = '';
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  child.stdout.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-1_000_000)));
  child.stderr.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-100_000)));
  return new Promise((resolveP, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${cmd} ${args.join(' ')}: not ready within ${timeoutMs} ms\n${out.slice(-2000)}${err.slice(-2000)}`)),
      timeoutMs,
    );
    const check = () => {
      if (ready.test(out)) {
        clearTimeout(timer);
        resolveP({ child, out: () => out, err: () => err, exited });
      }
    };
    child.stdout.on('data', check);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`${cmd} ${args.slice(0, 6).join(' ')} exited with ${code}\n${out.slice(-2000)}${err.slice(-2000)}`));
    });
  });
}

export async function stopChild(child: ChildProcess, exited: Promise<unknown>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(t);
}

export interface SockSample {
  rb: number;
  tb: number;
  /** peer's advertised window seen by the broker (bytes), when ss shows it */
  sndWnd: number | null;
  bytes: number;
}

/** `ss -tmi` inside a namespace: per established connection on the broker port, skmem rb/tb and TCP info. */
export function sockets(ns: string, port: number): SockSample[] {
  let text: string;
  try {
    text = sh('ip', ['netns', 'exec', ns, 'ss', '-tmiHn', 'state', 'established', `( sport = :${port} or dport = :${port} )`]);
  } catch {
    return [];
  }
  // ss prints each connection on one line with -H? it wraps info onto continuation lines: join them
  const blocks = text.split(/\n(?=\S)/);
  return blocks.flatMap((b) => {
    const mem = /skmem:\(r\d+,rb(\d+),t\d+,tb(\d+)/.exec(b);
    if (mem === null) return [];
    const wnd = /snd_wnd:(\d+)/.exec(b);
    const sent = /bytes_(?:sent|acked):(\d+)/.exec(b);
    const recv = /bytes_received:(\d+)/.exec(b);
    return [
      {
        rb: Number(mem[1]),
        tb: Number(mem[2]),
        sndWnd: wnd === null ? null : Number(wnd[1]),
        bytes: Math.max(Number(sent?.[1] ?? 0), Number(recv?.[1] ?? 0)),
      },
    ];
  });
}
