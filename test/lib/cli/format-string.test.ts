import { expect } from 'chai';
import type { FetchedRecord } from '../../../lib/client/fetcher.js';
import { UsageError } from '../../../lib/cli/errors.js';
import { compileFormat } from '../../../lib/cli/format-string.js';

const rec: FetchedRecord = {
  topic: 'orders',
  partition: 2,
  offset: 41n,
  timestamp: 1700000000000n,
  timestampType: 0,
  key: Buffer.from('k1'),
  value: Buffer.from([0x68, 0x69, 0x00, 0xff]),
  headers: [
    { key: 'a', value: Buffer.from('1') },
    { key: 'b', value: null },
  ],
  leaderEpoch: 0,
};

describe('cli: kcat-style format strings', () => {
  it('every token, with the raw bytes in utf8 mode', () => {
    const out = compileFormat('%t %p %o %k %v %h %T %K %V %S %%\\n', 'utf8')(rec);
    expect(
      out.equals(
        Buffer.concat([
          Buffer.from('orders 2 41 k1 '),
          Buffer.from([0x68, 0x69, 0x00, 0xff]),
          Buffer.from(' a=1,b= 1700000000000 2 4 4 %\n'),
        ]),
      ),
    ).to.equal(true);
  });

  it('escape and hex encodings apply to keys, values and header values', () => {
    expect(compileFormat('%k|%v|%h', 'escape')(rec).toString()).to.equal('k1|hi\\x00\\xff|a=1,b=');
    expect(compileFormat('%v', 'hex')(rec).toString()).to.equal('686900ff');
  });

  it('null key and value print as nothing, their lengths as -1; %s is the value (kcat)', () => {
    const n = { ...rec, key: null, value: null };
    expect(compileFormat('[%k][%s] %K %S\\t', 'utf8')(n).toString()).to.equal('[][] -1 -1\t');
  });

  it('unknown tokens and escapes are usage errors', () => {
    expect(() => compileFormat('%x', 'utf8')).to.throw(UsageError, /unknown format token '%x'/);
    expect(() => compileFormat('\\q', 'utf8')).to.throw(UsageError, /unknown escape/);
  });
});
