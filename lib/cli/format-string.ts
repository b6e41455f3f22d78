/**
 * kcat-style output format strings for `consume -f`: %t topic, %p partition, %o offset, %k key,
 * %v (or %s) value, %K key length, %V (or %S) value length, %h headers (k=v, comma-separated),
 * %T timestamp (ms), %%; escapes \n \r \t \\ \0. Keys, values and header values are written with the
 * chosen encoding (utf8: the raw bytes). Null keys and values print as nothing, their length as -1.
 */
import type { FetchedRecord } from '../client/fetcher.js';
import { encodeBytes, type Encoding } from './encoding.js';
import { UsageError } from './errors.js';

type Part = Buffer | ((r: FetchedRecord) => Buffer);

export const FORMAT_TOKENS = 't p o k v s K V S h T %';

function bytesOf(b: Buffer | null, enc: Encoding): Buffer {
  if (b === null) return Buffer.alloc(0);
  return enc === 'utf8' ? b : Buffer.from(encodeBytes(b, enc), 'utf8');
}

function text(s: string): Buffer {
  return Buffer.from(s, 'utf8');
}

/** Compiles a format string; throws UsageError for an unknown %x or \x. */
export function compileFormat(format: string, enc: Encoding): (r: FetchedRecord) => Buffer {
  const parts: Part[] = [];
  let lit = '';
  const flush = () => {
    if (lit !== '') parts.push(text(lit));
    lit = '';
  };
  for (let i = 0; i < format.length; i++) {
    const c = format[i];
    if (c === '\\') {
      const e = format[++i];
      if (e === 'n') lit += '\n';
      else if (e === 't') lit += '\t';
      else if (e === 'r') lit += '\r';
      else if (e === '\\') lit += '\\';
      else if (e === '0') lit += '\0';
      else throw new UsageError(`unknown escape '\\${e ?? ''}' in format '${format}' (known: \\n \\t \\r \\\\ \\0)`);
      continue;
    }
    if (c === undefined) break; // i < format.length
    if (c !== '%') {
      lit += c;
      continue;
    }
    const t = format[++i];
    if (t === '%') {
      lit += '%';
      continue;
    }
    flush();
    switch (t) {
      case 't':
        parts.push((r) => text(r.topic));
        break;
      case 'p':
        parts.push((r) => text(String(r.partition)));
        break;
      case 'o':
        parts.push((r) => text(String(r.offset)));
        break;
      case 'k':
        parts.push((r) => bytesOf(r.key, enc));
        break;
      case 'v':
      case 's':
        parts.push((r) => bytesOf(r.value, enc));
        break;
      case 'K':
        parts.push((r) => text(String(r.key === null ? -1 : r.key.length)));
        break;
      case 'V':
      case 'S':
        parts.push((r) => text(String(r.value === null ? -1 : r.value.length)));
        break;
      case 'T':
        parts.push((r) => text(String(r.timestamp)));
        break;
      case 'h':
        parts.push((r) => Buffer.concat(r.headers.flatMap((h, i) => [text(`${i === 0 ? '' : ','}${h.key}=`), bytesOf(h.value, enc)])));
        break;
      default:
        throw new UsageError(
          `unknown format token '%${t ?? ''}' in '${format}' (known: ${FORMAT_TOKENS.split(' ')
            .map((x) => `%${x}`)
            .join(' ')})`,
        );
    }
  }
  flush();
  return (r) => Buffer.concat(parts.map((p) => (Buffer.isBuffer(p) ? p : p(r))));
}
