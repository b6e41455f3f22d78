/**
 * Runs a client program as a child process, asynchronously (the broker under test usually runs in this
 * same process, so a synchronous spawn would starve it): stdin in, stdout/stderr collected, killed and
 * rejected after `timeoutMs`.
 */
import { spawn } from 'node:child_process';

export interface ProcessResult {
  code: number | null;
  /** the signal that ended the process (code is null then) */
  signal: NodeJS.Signals | null;
  stdout: Buffer;
  stderr: string;
}

export function runProcess(
  cmd: string,
  args: readonly string[],
  input: string | Buffer,
  timeoutMs: number,
  env?: NodeJS.ProcessEnv,
): Promise<ProcessResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'], ...(env !== undefined ? { env } : {}) });
    const out: Buffer[] = [];
    let err = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${cmd} ${args.join(' ')} timed out after ${timeoutMs} ms; stderr:\n${err.slice(-4000)}`));
    }, timeoutMs);
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout: Buffer.concat(out), stderr: err });
    });
    child.stdin.on('error', () => {}); // an early exit shows up in the exit code and stderr
    child.stdin.end(input);
  });
}
