/**
 * Drives kcat 1.7.1 (Debian, librdkafka 2.0.2) as a child process. Always asynchronous: the broker
 * under test usually runs in this same process, so a synchronous spawn would starve it.
 */
import { existsSync } from 'node:fs';
import { type ProcessResult, runProcess } from './process.js';

export const KCAT = '/usr/bin/kcat';

export type KcatResult = ProcessResult;

/** Runs kcat with `args`, feeding `input` on stdin; rejects when it cannot start or times out. */
export function runKcat(args: string[], input: string | Buffer = '', timeoutMs = 60_000): Promise<KcatResult> {
  if (!existsSync(KCAT)) return Promise.reject(new Error(`${KCAT} is missing: install kcat (Debian package kcat 1.7.1)`));
  return runProcess(KCAT, args, input, timeoutMs);
}

/**
 * Output format for `kcat -C -f`: partition, offset, timestamp, key length, value length, then the
 * key and value bytes (their lengths make them unambiguous whatever they contain), then the headers
 * (`n=v` CSV) up to the newline.
 */
export const KCAT_FORMAT = '%p %o %T %K %S %k %s %h\\n';

export interface KcatRecord {
  partition: number;
  offset: number;
  timestamp: number;
  key: Buffer | null;
  value: Buffer | null;
  /** [name, value] in order; duplicates kept. Assumes header names and values hold no ',', '=' or newline. */
  headers: [string, string][];
}

/** Parses output written with KCAT_FORMAT; throws on anything that does not fit it exactly. */
export function parseKcatOutput(buf: Buffer): KcatRecord[] {
  const records: KcatRecord[] = [];
  let p = 0;
  const fail = (what: string): never => {
    throw new Error(`kcat output at byte ${p}: ${what}: ${JSON.stringify(buf.subarray(p, p + 80).toString())}`);
  };
  const int = (): number => {
    const sp = buf.indexOf(0x20, p);
    if (sp < 0) fail('expected a number and a space');
    const text = buf.toString('latin1', p, sp);
    if (!/^-?\d+$/.test(text)) fail(`not a number: ${text}`);
    p = sp + 1;
    return Number(text);
  };
  const bytes = (len: number): Buffer | null => {
    const n = Math.max(0, len);
    if (p + n + 1 > buf.length || buf[p + n] !== 0x20) fail(`expected ${n} bytes and a space`);
    const b = buf.subarray(p, p + n);
    p += n + 1;
    return len < 0 ? null : Buffer.from(b);
  };
  while (p < buf.length) {
    const partition = int();
    const offset = int();
    const timestamp = int();
    const keyLen = int();
    const valueLen = int();
    const key = bytes(keyLen);
    const value = bytes(valueLen);
    const nl = buf.indexOf(0x0a, p);
    if (nl < 0) fail('expected headers and a newline');
    const h = buf.toString('utf8', p, nl);
    p = nl + 1;
    const headers =
      h === ''
        ? []
        : h.split(',').map((kv): [string, string] => {
            const eq = kv.indexOf('=');
            return eq < 0 ? [kv, ''] : [kv.slice(0, eq), kv.slice(eq + 1)];
          });
    records.push({ partition, offset, timestamp, key, value, headers });
  }
  return records;
}
