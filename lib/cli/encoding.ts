/**
 * How keys, values and header values are written as text (consume output, dump-log) and read back
 * (produce input). utf8: the bytes themselves (lossless on input; output of invalid UTF-8 in JSON is
 * lossy); escape: printable ASCII as is, `\\`, `\n`, `\r`, `\t` and `\xHH` for every other byte;
 * base64 and hex: the standard forms. escape, base64 and hex round-trip any bytes.
 */
import { CliError, CliErrorCode } from './errors.js';

export const ENCODINGS = ['utf8', 'escape', 'base64', 'hex'] as const;
export type Encoding = (typeof ENCODINGS)[number];

const HEX = '0123456789abcdef';

/** Bytes as `escape` text. */
export function escapeBytes(b: Uint8Array): string {
  let out = '';
  for (const c of b) {
    if (c === 0x5c) out += '\\\\';
    else if (c === 0x0a) out += '\\n';
    else if (c === 0x0d) out += '\\r';
    else if (c === 0x09) out += '\\t';
    else if (c >= 0x20 && c < 0x7f) out += String.fromCharCode(c);
    else out += `\\x${HEX[c >> 4]}${HEX[c & 15]}`;
  }
  return out;
}

/** `escape` text back to bytes; the text's own characters are taken as UTF-8. */
export function unescapeBytes(text: string): Buffer {
  const src = Buffer.from(text, 'utf8');
  const out = Buffer.allocUnsafe(src.length);
  let n = 0;
  for (let i = 0; i < src.length; i++) {
    const c = src[i] as number;
    if (c !== 0x5c) {
      out[n++] = c;
      continue;
    }
    const e = src[++i];
    if (e === 0x5c) out[n++] = 0x5c;
    else if (e === 0x6e) out[n++] = 0x0a;
    else if (e === 0x72) out[n++] = 0x0d;
    else if (e === 0x74) out[n++] = 0x09;
    else if (e === 0x30) out[n++] = 0x00;
    else if (e === 0x78) {
      const h = src.toString('latin1', i + 1, i + 3);
      if (!/^[0-9a-fA-F]{2}$/.test(h)) throw new CliError(CliErrorCode.INPUT, `bad escape '\\x${h}' (expected two hex digits)`);
      out[n++] = parseInt(h, 16);
      i += 2;
    } else {
      throw new CliError(
        CliErrorCode.INPUT,
        `unknown escape '\\${e === undefined ? '' : String.fromCharCode(e)}' (known: \\\\ \\n \\r \\t \\0 \\xHH)`,
      );
    }
  }
  return out.subarray(0, n);
}

export function encodeBytes(b: Uint8Array, enc: Encoding): string {
  const buf = Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  switch (enc) {
    case 'utf8':
      return buf.toString('utf8');
    case 'escape':
      return escapeBytes(buf);
    case 'base64':
      return buf.toString('base64');
    case 'hex':
      return buf.toString('hex');
  }
}

export function encodeNullable(b: Uint8Array | null, enc: Encoding): string | null {
  return b === null ? null : encodeBytes(b, enc);
}

/** Text in `enc` back to bytes; base64 and hex are checked strictly. */
export function decodeText(text: string, enc: Encoding): Buffer {
  switch (enc) {
    case 'utf8':
      return Buffer.from(text, 'utf8');
    case 'escape':
      return unescapeBytes(text);
    case 'base64': {
      const t = text.trim();
      if (!/^[A-Za-z0-9+/]*={0,2}$/.test(t) || t.length % 4 === 1)
        throw new CliError(CliErrorCode.INPUT, `'${t.slice(0, 40)}' is not base64`);
      return Buffer.from(t, 'base64');
    }
    case 'hex': {
      const t = text.trim();
      if (!/^(?:[0-9a-fA-F]{2})*$/.test(t)) throw new CliError(CliErrorCode.INPUT, `'${t.slice(0, 40)}' is not hex`);
      return Buffer.from(t, 'hex');
    }
  }
}

/** Raw input bytes (a stdin line or part of one) in `enc` to bytes: utf8 keeps the bytes as they are. */
export function decodeRaw(raw: Buffer, enc: Encoding): Buffer {
  return enc === 'utf8' ? raw : decodeText(raw.toString('utf8'), enc);
}
