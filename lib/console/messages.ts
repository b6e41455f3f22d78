/**
 * The message browser's API:
 *   GET  /ui/api/topics/:t/messages?partition=all|N&from=start|end|offset|timestamp|cursor&offset=&timestamp=
 *        &cursor=p:o,...&limit=100&q=text&filter=expr     a page of records (browse.ts)
 *   GET  /ui/api/topics/:t/export?format=jsonl|csv&...    the same selection as a download (limit up to 10,000)
 *   GET  /ui/api/topics/:t/tail?partition=&q=&filter=     live records as Server-Sent Events (tail.ts)
 *   POST /ui/api/topics/:t/messages {partition?, key?, value?, headers?, keyEncoding?, valueEncoding?}
 */
import type { ServerResponse } from 'node:http';
import type { RecordHeader } from '../../protocol/records/index.js';
import type { FetchedRecord } from '../client/fetcher.js';
import type { TopicRecord } from '../metadata/store.js';
import { browse, parseSelection } from './browse.js';
import { badRequest, bodyObject, notFound, sendJson } from './http.js';
import { inprocConnection } from './inproc.js';
import { produceRecord, showRecord, textOf } from './records.js';
import { tail } from './tail.js';
import type { ApiRoute, ConsoleDeps } from './types.js';

function bytesOf(v: unknown, encoding: unknown, what: string): Buffer | null {
  if (v === null || v === undefined) return null;
  if (typeof v !== 'string') throw badRequest(`"${what}" must be a string or null`, { field: what });
  const enc = encoding ?? 'text';
  if (enc === 'base64') {
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(v)) throw badRequest(`"${what}" is not base64`, { field: what });
    return Buffer.from(v, 'base64');
  }
  if (enc === 'json') {
    try {
      JSON.parse(v);
    } catch (e) {
      throw badRequest(`"${what}" is not JSON: ${e instanceof Error ? e.message : String(e)}`, { field: what });
    }
  } else if (enc !== 'text') throw badRequest(`the encoding of "${what}" must be text, json or base64`, { field: what });
  return Buffer.from(v, 'utf8');
}

function headersOf(v: unknown): RecordHeader[] {
  if (v === undefined || v === null) return [];
  const list: [unknown, unknown][] = Array.isArray(v)
    ? v.map((h: unknown) => {
        if (typeof h !== 'object' || h === null) throw badRequest('a header is {"key": ..., "value": ...}', { field: 'headers' });
        return [(h as Record<string, unknown>)['key'], (h as Record<string, unknown>)['value']];
      })
    : typeof v === 'object'
      ? Object.entries(v as Record<string, unknown>)
      : [];
  return list.map(([k, val]) => {
    if (typeof k !== 'string' || k === '') throw badRequest('a header needs a non-empty "key"', { field: 'headers' });
    return { key: k, value: bytesOf(val, 'text', `header ${k}`) };
  });
}

/** Text when the bytes are text, else base64 (with `<field>Encoding: "base64"`). */
function exported(r: FetchedRecord, topic: string): Record<string, unknown> {
  const field = (b: Buffer | null) => {
    if (b === null) return { v: null, enc: 'null' };
    const t = textOf(b);
    return t === null ? { v: b.toString('base64'), enc: 'base64' } : { v: t, enc: 'text' };
  };
  const k = field(r.key);
  const v = field(r.value);
  return {
    topic,
    partition: r.partition,
    offset: r.offset.toString(),
    timestamp: Number(r.timestamp),
    key: k.v,
    keyEncoding: k.enc,
    value: v.v,
    valueEncoding: v.enc,
    headers: r.headers.map((h) => ({ key: h.key, value: field(h.value).v })),
  };
}

/** A CSV field (RFC 4180), with a leading ' before =, +, -, @ so that spreadsheets do not run it as a formula. */
function csvField(v: unknown): string {
  let s = v === null || v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v);
  if (/^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

function sendExport(res: ServerResponse, topic: string, format: string, records: FetchedRecord[]): void {
  const rows = records.map((r) => exported(r, topic));
  let body: string;
  if (format === 'csv') {
    const cols = ['topic', 'partition', 'offset', 'timestamp', 'key', 'value', 'headers'];
    body = [cols.join(','), ...rows.map((r) => cols.map((c) => csvField(r[c])).join(','))].join('\r\n') + '\r\n';
  } else {
    body = rows.map((r) => JSON.stringify(r)).join('\n') + (rows.length > 0 ? '\n' : '');
  }
  const safe = topic.replace(/[^A-Za-z0-9._-]/g, '_');
  res.writeHead(200, {
    'content-type': format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson; charset=utf-8',
    'content-disposition': `attachment; filename="${safe}.${format === 'csv' ? 'csv' : 'jsonl'}"`,
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
  });
  res.end(body);
}

export function messageRoutes(deps: ConsoleDeps, listenerName: string): ApiRoute[] {
  const s = deps.services;
  const kafka = inprocConnection(s, listenerName);
  const topicOr404 = (name: string): TopicRecord => {
    const t = s.metadata.topic(name);
    if (t === undefined) throw notFound(`no topic '${name}'`);
    return t;
  };
  return [
    {
      method: 'GET',
      path: /^\/topics\/([^/]+)\/messages$/,
      async handle(_req, res, { url, params: [name = ''] }) {
        const t = topicOr404(name);
        const sel = parseSelection(t, url.searchParams, 1000);
        const page = await browse(s, kafka, t, sel);
        sendJson(res, 200, { records: page.records.map(showRecord), next: page.next, scanned: page.scanned, atEnd: page.atEnd });
      },
    },
    {
      method: 'GET',
      path: /^\/topics\/([^/]+)\/export$/,
      async handle(_req, res, { url, params: [name = ''] }) {
        const t = topicOr404(name);
        const format = url.searchParams.get('format') ?? 'jsonl';
        if (format !== 'jsonl' && format !== 'csv') throw badRequest('format must be jsonl or csv');
        const page = await browse(s, kafka, t, parseSelection(t, url.searchParams));
        sendExport(res, t.name, format, page.records);
      },
    },
    {
      method: 'GET',
      path: /^\/topics\/([^/]+)\/tail$/,
      async handle(req, res, { url, params: [name = ''] }) {
        const t = topicOr404(name);
        await tail(deps, listenerName, t, parseSelection(t, url.searchParams), req, res);
      },
    },
    {
      method: 'POST',
      path: /^\/topics\/([^/]+)\/messages$/,
      async handle(_req, res, { params: [name = ''], body }) {
        const t = topicOr404(name);
        const o = bodyObject(body);
        const p = o['partition'];
        if (p !== undefined && p !== null && p !== '' && (typeof p !== 'number' || !Number.isSafeInteger(p) || p < 0 || p >= t.partitions))
          throw badRequest(`partition must be 0..${t.partitions - 1} (or absent: by key)`, { field: 'partition' });
        const out = await produceRecord(kafka, t.name, t.partitions, {
          partition: typeof p === 'number' ? p : null,
          key: bytesOf(o['key'], o['keyEncoding'], 'key'),
          value: bytesOf(o['value'], o['valueEncoding'], 'value'),
          headers: headersOf(o['headers']),
        });
        sendJson(res, 201, { topic: t.name, partition: out.partition, offset: out.offset });
      },
    },
  ];
}
