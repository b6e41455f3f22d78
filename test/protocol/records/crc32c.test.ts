/**
 * CRC-32C (Castagnoli), the record batch checksum: gregor's addon (native/crc32c, the CPU's CRC32
 * instruction over three interleaved streams joined by table-driven shifts) against @node-rs/crc32,
 * the portable implementation it replaces where it can. The boundaries that matter to the addon are
 * the 8-byte alignment of the start and the 3 * 4096-byte interleaved blocks.
 */
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { arch } from 'node:os';
import { fileURLToPath } from 'node:url';
import { crc32c as nodeRsCrc32c } from '@node-rs/crc32';
import fc from 'fast-check';
import { crc32c, crc32cImplementation } from '../../../protocol/records/native.js';
import { loadAddon } from '../../../protocol/records/native-addon.js';

interface Crc32cAddon {
  crc32c(data: Uint8Array): number;
  hardware: boolean;
}

const portable = (b: Uint8Array): number => nodeRsCrc32c(b) >>> 0;
const BLOCK = 3 * 4096;

describe('records/crc32c', () => {
  it('the check value of "123456789" is 0xe3069283 (RFC 3720 B.4)', () => {
    expect(crc32c(Buffer.from('123456789'))).to.equal(0xe3069283);
    expect(crc32c(new Uint8Array(0))).to.equal(0);
  });

  it('equals @node-rs/crc32 on any bytes, at any start alignment', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 0, maxLength: 3000 }), fc.nat(15), (bytes, skip) => {
        const view = Buffer.from(bytes).subarray(Math.min(skip, bytes.length));
        expect(crc32c(view)).to.equal(portable(view));
      }),
    );
  });

  it('equals @node-rs/crc32 around the interleaved block sizes and on a 1 MiB batch', () => {
    const big = randomBytes(1 << 20);
    const lengths = [BLOCK - 1, BLOCK, BLOCK + 1, BLOCK + 7, 2 * BLOCK - 8, 2 * BLOCK, 2 * BLOCK + 9, 5 * BLOCK + 4095, 1 << 20];
    for (const len of lengths)
      for (const start of [0, 1, 3, 7, 8]) {
        const view = big.subarray(start, Math.min(big.length, start + len));
        expect(crc32c(view), `length ${view.length} from ${start}`).to.equal(portable(view));
      }
    // a one-bit change anywhere in the interleaved streams changes the sum
    const flipped = Buffer.from(big.subarray(0, 2 * BLOCK));
    const before = crc32c(flipped);
    for (const at of [0, 4095, 4096, 8191, 8192, 12287, 12288, 2 * BLOCK - 1]) {
      flipped[at] = (flipped[at] ?? 0) ^ 0x10;
      expect(crc32c(flipped), `bit flipped at ${at}`).to.not.equal(before);
      flipped[at] = (flipped[at] ?? 0) ^ 0x10;
    }
  });

  it('on x86-64 the addon is built, finds the CRC32 instruction and serves crc32c()', function () {
    // native/build.mjs builds it on every machine; only x86-64 has the instruction path (elsewhere
    // the addon loads with hardware: false and @node-rs/crc32 serves)
    if (arch() !== 'x64') this.skip();
    const { addon, error } = loadAddon<Crc32cAddon>('crc32c');
    expect(error).to.equal(null);
    expect(addon?.hardware).to.equal(true);
    expect(crc32cImplementation()).to.deep.equal({ name: 'addon', reason: null });
    expect(() => addon?.crc32c([1, 2, 3] as unknown as Uint8Array)).to.throw(TypeError, /Uint8Array/);
    expect(() => addon?.crc32c(new Uint16Array(2) as unknown as Uint8Array)).to.throw(TypeError, /Uint8Array/);
  });

  it('GREGOR_CRC32C=portable makes a process use @node-rs/crc32', () => {
    const native = fileURLToPath(new URL('../../../protocol/records/native.js', import.meta.url));
    const script = `import(${JSON.stringify(native)}).then((m) => console.log(JSON.stringify([m.crc32cImplementation(), m.crc32c(Buffer.from('123456789'))])))`;
    const out = execFileSync(process.execPath, ['-e', script], { env: { ...process.env, GREGOR_CRC32C: 'portable' }, encoding: 'utf8' });
    expect(JSON.parse(out)).to.deep.equal([{ name: 'portable', reason: 'GREGOR_CRC32C=portable' }, 0xe3069283]);
  });
});
