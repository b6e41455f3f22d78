import { expect } from 'chai';
import { decodeText, encodeBytes, ENCODINGS, escapeBytes, unescapeBytes } from '../../../lib/cli/encoding.js';
import { CliError } from '../../../lib/cli/errors.js';

const ALL = Buffer.from(Array.from({ length: 256 }, (_, i) => i));

describe('cli: byte encodings', () => {
  it('escape, base64 and hex round-trip all 256 byte values', () => {
    for (const enc of ENCODINGS.filter((e) => e !== 'utf8')) {
      expect(decodeText(encodeBytes(ALL, enc), enc).equals(ALL), enc).to.equal(true);
    }
  });

  it('escape keeps printable ASCII and names control bytes', () => {
    expect(escapeBytes(Buffer.from('a b\\c\n\r\t\x00\x7f\xff', 'latin1'))).to.equal('a b\\\\c\\n\\r\\t\\x00\\x7f\\xff');
    expect(unescapeBytes('\\0\\x41\\n').equals(Buffer.from([0, 0x41, 0x0a]))).to.equal(true);
    expect(unescapeBytes('é').equals(Buffer.from('é', 'utf8'))).to.equal(true);
    expect(() => unescapeBytes('\\q')).to.throw(CliError, /unknown escape/);
    expect(() => unescapeBytes('\\x4')).to.throw(CliError, /two hex digits/);
  });

  it('base64 and hex are checked strictly', () => {
    expect(() => decodeText('not base64!', 'base64')).to.throw(CliError);
    expect(() => decodeText('abc', 'hex')).to.throw(CliError);
    expect(decodeText('', 'base64').length).to.equal(0);
  });
});
