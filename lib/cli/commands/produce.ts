/**
 * produce <topic>: records from stdin, one per line. --input text: the line is the value, or
 * key<sep>value with -K (split at the first <sep>); --input json: one object per line
 * {"key","value","headers","partition","timestamp"}, as `consume --format json` prints them. With
 * --encoding escape, base64 or hex the keys, values and header values are decoded (binary-safe);
 * utf8 takes the line's bytes as they are.
 */
import type { RecordHeader } from '../../../protocol/records/index.js';
import { Producer, type ProduceRecord } from '../../client/producer.js';
import type { Context } from '../context.js';
import { decodeRaw, decodeText, type Encoding } from '../encoding.js';
import { CliError, CliErrorCode } from '../errors.js';
import { renderTable } from '../output.js';
import { parseCompression, parseKeyValue } from '../parse.js';
import { Progress } from '../progress.js';
import { emit } from './common.js';

type Flags = Record<string, unknown>;

/** Lines of a byte stream (split at \n, kept as bytes); a last line without \n counts when not empty. */
export async function* readLines(stream: NodeJS.ReadableStream): AsyncGenerator<Buffer> {
  let rest: Buffer = Buffer.alloc(0);
  for await (const chunk of stream) {
    const buf: Buffer = rest.length === 0 ? (chunk as Buffer) : Buffer.concat([rest, chunk as Buffer]);
    let start = 0;
    for (let nl = buf.indexOf(0x0a, start); nl >= 0; nl = buf.indexOf(0x0a, start)) {
      yield buf.subarray(start, nl);
      start = nl + 1;
    }
    rest = Buffer.from(buf.subarray(start));
  }
  if (rest.length > 0) yield rest;
}

function inputError(line: number, message: string): CliError {
  return new CliError(CliErrorCode.INPUT, `stdin line ${line}: ${message}`);
}

function optionalBytes(v: unknown, enc: Encoding, field: string, line: number): Buffer | null {
  if (v === null || v === undefined) return null;
  if (typeof v !== 'string') throw inputError(line, `"${field}" must be a string or null`);
  try {
    return decodeText(v, enc);
  } catch (e) {
    throw inputError(line, `"${field}": ${(e as Error).message}`);
  }
}

/** One --input json line. */
export function parseJsonRecord(text: string, enc: Encoding, line: number): ProduceRecord {
  let o: unknown;
  try {
    o = JSON.parse(text);
  } catch (e) {
    throw inputError(line, `not JSON: ${(e as Error).message}`);
  }
  if (o === null || typeof o !== 'object' || Array.isArray(o)) throw inputError(line, 'expected a JSON object');
  const r = o as Record<string, unknown>;
  const headers: RecordHeader[] = [];
  const h = r['headers'];
  if (Array.isArray(h)) {
    for (const x of h as unknown[]) {
      const e = x as Record<string, unknown> | null;
      if (e === null || typeof e !== 'object' || typeof e['key'] !== 'string')
        throw inputError(line, '"headers" entries must be {"key": string, "value": string|null}');
      headers.push({ key: e['key'], value: optionalBytes(e['value'], enc, 'headers[].value', line) });
    }
  } else if (h !== undefined && h !== null) {
    if (typeof h !== 'object') throw inputError(line, '"headers" must be an array or an object');
    for (const [k, v] of Object.entries(h as Record<string, unknown>))
      headers.push({ key: k, value: optionalBytes(v, enc, `headers.${k}`, line) });
  }
  const rec: ProduceRecord = {
    key: optionalBytes(r['key'], enc, 'key', line),
    value: optionalBytes(r['value'], enc, 'value', line),
    headers,
  };
  const p = r['partition'];
  if (p !== undefined && p !== null) {
    if (typeof p !== 'number' || !Number.isInteger(p) || p < 0) throw inputError(line, '"partition" must be a non-negative integer');
    rec.partition = p;
  }
  const ts = r['timestamp'];
  if (ts !== undefined && ts !== null) {
    if (typeof ts !== 'number' || !Number.isInteger(ts)) throw inputError(line, '"timestamp" must be an integer (ms)');
    rec.timestamp = BigInt(ts);
  }
  return rec;
}

export async function produce(ctx: Context, topic: string, f: Flags): Promise<number> {
  const enc = f['encoding'] as Encoding;
  const json = f['input'] === 'json';
  const sep = f['keySeparator'] === undefined ? null : Buffer.from(f['keySeparator'] as string, 'utf8');
  const fixedKey = f['key'] === undefined ? null : decodeText(f['key'] as string, enc);
  const headers: RecordHeader[] = ((f['header'] as string[] | undefined) ?? []).map((kv) => {
    const [k, v] = parseKeyValue(kv, '--header key=value');
    return { key: k, value: decodeText(v, enc) };
  });
  const tombstone = f['tombstone'] === true;
  const opts = {
    acks: f['acks'] as number,
    compression: parseCompression(String(f['compression'])),
    batchBytes: f['batchBytes'] as number,
    timeoutMs: ctx.client().options.requestTimeoutMs,
  };
  const producer = new Producer(
    ctx.client(),
    topic,
    f['partition'] === undefined ? opts : { ...opts, partition: f['partition'] as number },
  );
  await producer.init();
  const progress = new Progress('produced');
  let lineNo = 0;
  for await (const line of readLines(process.stdin)) {
    lineNo++;
    let rec: ProduceRecord;
    if (json) {
      if (line.toString('utf8').trim() === '') continue;
      rec = parseJsonRecord(line.toString('utf8'), enc, lineNo);
      if (rec.headers.length === 0 && headers.length > 0) rec.headers = headers;
      if (rec.key === null && fixedKey !== null) rec.key = fixedKey;
    } else {
      let key = fixedKey;
      let value = line;
      if (sep !== null) {
        const i = line.indexOf(sep);
        if (i < 0) throw inputError(lineNo, `no key separator '${sep.toString('utf8')}'`);
        key = decodeRaw(line.subarray(0, i), enc);
        value = line.subarray(i + sep.length);
      }
      try {
        rec = { key, value: decodeRaw(value, enc), headers };
      } catch (e) {
        throw inputError(lineNo, (e as Error).message);
      }
    }
    if (tombstone && rec.value !== null && rec.value.length === 0) rec.value = null;
    await producer.add(rec);
    progress.add(1, line.length + 1);
  }
  await producer.flush();
  progress.done();
  const stats = [...producer.stats.values()].sort((a, b) => a.partition - b.partition);
  emit(
    ctx,
    {
      topic,
      records: producer.sent,
      partitions: stats.map((s) => ({
        partition: s.partition,
        records: s.records,
        firstOffset: s.firstOffset < 0n ? null : s.firstOffset,
        lastOffset: s.lastOffset < 0n ? null : s.lastOffset,
      })),
    },
    () =>
      renderTable(
        ['PARTITION', 'RECORDS', 'FIRST-OFFSET', 'LAST-OFFSET'],
        stats.map((s) => [s.partition, s.records, s.firstOffset < 0n ? null : s.firstOffset, s.lastOffset < 0n ? null : s.lastOffset]),
      ),
  );
  return 0;
}
