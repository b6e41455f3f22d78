import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/**
 * Runs Debian's kafka-python (under /usr/bin/python3) to build or read record batches and message
 * sets, so tests can check our codec against a real client implementation.
 */

const PYTHON = '/usr/bin/python3';

const SCRIPT = String.raw`
import json, sys
from kafka.record.default_records import DefaultRecordBatchBuilder, DefaultRecordBatch
from kafka.record.legacy_records import LegacyRecordBatchBuilder, LegacyRecordBatch
from kafka.record.memory_records import MemoryRecords

def unhex(v):
    return None if v is None else bytes.fromhex(v)

def tohex(v):
    return None if v is None else bytes(v).hex()

def handle(req):
  op = req['op']
  if op == 'build_default':
      b = DefaultRecordBatchBuilder(magic=2, compression_type=req['codec'],
          is_transactional=req.get('transactional', False), producer_id=req.get('producerId', -1),
          producer_epoch=req.get('producerEpoch', -1), base_sequence=req.get('baseSequence', -1),
          batch_size=1 << 30)
      for i, r in enumerate(req['records']):
          headers = [(k, unhex(v)) for k, v in r.get('headers', [])]
          b.append(i, timestamp=r['timestamp'], key=unhex(r['key']), value=unhex(r['value']), headers=headers)
      return ({'bytes': bytes(b.build()).hex()})
  elif op == 'build_legacy':
      b = LegacyRecordBatchBuilder(magic=req['magic'], compression_type=req['codec'], batch_size=1 << 30)
      for i, r in enumerate(req['records']):
          b.append(i, timestamp=r['timestamp'], key=unhex(r['key']), value=unhex(r['value']))
      return ({'bytes': bytes(b.build()).hex()})
  elif op == 'read':
      mr = MemoryRecords(bytes.fromhex(req['bytes']))
      batches = []
      while mr.has_next():
          batch = mr.next_batch()
          if batch is None:
              break
          entry = {'crcValid': bool(batch.validate_crc()), 'magic': batch.magic if isinstance(batch, DefaultRecordBatch) else batch._magic, 'records': []}
          if isinstance(batch, DefaultRecordBatch):
              entry.update({'baseOffset': batch.base_offset, 'isTransactional': bool(batch.is_transactional),
                            'isControl': bool(batch.is_control_batch), 'compression': batch.compression_type,
                            'timestampType': batch.timestamp_type, 'maxTimestamp': batch.max_timestamp})
          for rec in batch:
              entry['records'].append({'offset': rec.offset, 'timestamp': rec.timestamp,
                  'key': tohex(rec.key), 'value': tohex(rec.value),
                  'headers': [[k, tohex(v)] for k, v in (rec.headers or [])]})
          batches.append(entry)
      return ({'batches': batches})
  else:
      raise SystemExit('unknown op ' + op)

print(json.dumps([handle(r) for r in json.load(sys.stdin)]))
`;

export interface PyRecord {
  key: string | null;
  value: string | null;
  timestamp: number;
  offset?: number;
  headers?: [string, string | null][];
}

export interface PyBatch {
  crcValid: boolean;
  magic: number;
  baseOffset?: number;
  isTransactional?: boolean;
  isControl?: boolean;
  compression?: number;
  timestampType?: number;
  maxTimestamp?: number;
  /** kafka-python reads no timestamp (None) from a magic 0 message */
  records: (Omit<PyRecord, 'timestamp'> & { offset: number; timestamp: number | null })[];
}

/** Why kafka-python cannot be used here, or null when it can. */
export function kafkaPythonUnavailable(modules: string[] = []): string | null {
  if (!existsSync(PYTHON)) return `${PYTHON} is missing`;
  const imports = ['kafka', ...modules].map((m) => `import ${m}`).join('; ');
  const r = spawnSync(PYTHON, ['-c', imports], { encoding: 'utf8' });
  return r.status === 0 ? null : `${PYTHON} cannot ${imports}: ${r.stderr.trim().split('\n').pop() ?? ''}`;
}

/** Runs several requests in one interpreter (importing kafka takes a while); one answer per request. */
export function runKafkaPython(requests: object[]): unknown[] {
  const r = spawnSync(PYTHON, ['-c', SCRIPT], { input: JSON.stringify(requests), encoding: 'utf8', maxBuffer: 1 << 28 });
  if (r.status !== 0) throw new Error(`kafka-python failed (${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout) as unknown[];
}

export interface BuildDefaultRequest {
  codec: number;
  records: PyRecord[];
  transactional?: boolean;
  producerId?: number;
  producerEpoch?: number;
  baseSequence?: number;
}

export interface BuildLegacyRequest {
  magic: 0 | 1;
  codec: number;
  records: PyRecord[];
}

export function pyBuildDefault(reqs: BuildDefaultRequest[]): Buffer[] {
  return runKafkaPython(reqs.map((r) => ({ op: 'build_default', ...r }))).map((a) => Buffer.from((a as { bytes: string }).bytes, 'hex'));
}

export function pyBuildLegacy(reqs: BuildLegacyRequest[]): Buffer[] {
  return runKafkaPython(reqs.map((r) => ({ op: 'build_legacy', ...r }))).map((a) => Buffer.from((a as { bytes: string }).bytes, 'hex'));
}

/** What kafka-python's MemoryRecords reads from each buffer. */
export function pyRead(buffers: Buffer[]): PyBatch[][] {
  return runKafkaPython(buffers.map((b) => ({ op: 'read', bytes: b.toString('hex') }))).map((a) => (a as { batches: PyBatch[] }).batches);
}
