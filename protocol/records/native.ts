/**
 * The native (and other heavy) modules of the record path, loaded on first use rather than at
 * import: a broker that never sees a compressed batch never loads a codec, and start-up does not pay
 * for them (each costs 10-30 ms to load). They are CommonJS packages, so a synchronous require
 * works wherever they are needed.
 */
import { createRequire } from 'node:module';
import { loadAddon } from './native-addon.js';

const load = createRequire(import.meta.url);

// T is the module's type, named by the caller: require() cannot infer it.
// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- see above
function lazy<T>(id: string): () => T {
  let mod: T | undefined;
  return () => (mod ??= load(id) as T);
}

export const crc32Module = lazy<typeof import('@node-rs/crc32')>('@node-rs/crc32');
export const snappyModule = lazy<typeof import('snappy')>('snappy');
export const lz4Module = lazy<typeof import('lz4-napi')>('lz4-napi');
export const zstdModule = lazy<typeof import('@toondepauw/node-zstd')>('@toondepauw/node-zstd');
export const fzstdModule = lazy<typeof import('fzstd')>('fzstd');

interface Crc32cAddon {
  crc32c(data: Uint8Array): number;
  /** false on a CPU without the CRC32 instruction: crc32c() then throws */
  hardware: boolean;
}

/**
 * Which CRC-32C serves this process: gregor's own addon (native/crc32c: the CPU's CRC32 instruction
 * over three interleaved streams, ~5x @node-rs/crc32 on a 1 MB batch and ~3x on a 100-byte one, where
 * the call's own cost dominates) when it is built and the CPU has the instruction, else
 * @node-rs/crc32. GREGOR_CRC32C=portable forces the latter (to compare the two).
 */
export function crc32cImplementation(): { name: 'addon' | 'portable'; reason: string | null } {
  return (chosen ??= chooseCrc32c()).info;
}

let chosen: { fn: (data: Uint8Array) => number; info: { name: 'addon' | 'portable'; reason: string | null } } | undefined;

function chooseCrc32c(): NonNullable<typeof chosen> {
  const portable = (reason: string): NonNullable<typeof chosen> => ({
    fn: (data) => crc32Module().crc32c(data),
    info: { name: 'portable', reason },
  });
  if (process.env['GREGOR_CRC32C'] === 'portable') return portable('GREGOR_CRC32C=portable');
  const { addon, error } = loadAddon<Crc32cAddon>('crc32c');
  if (addon === null) return portable(error ?? 'crc32c addon not loaded');
  if (!addon.hardware) return portable('this CPU has no CRC32 instruction the addon can use');
  return { fn: (data) => addon.crc32c(data), info: { name: 'addon', reason: null } };
}

/** CRC-32C (Castagnoli) of `data`, as record batches (magic 2) carry it (unsigned). */
export function crc32c(data: Buffer | Uint8Array): number {
  return (chosen ??= chooseCrc32c()).fn(data);
}

/** CRC-32 (IEEE) of `data`, as legacy messages (magic 0/1) carry it. */
export function crc32(data: Buffer | Uint8Array): number {
  return crc32Module().crc32(data);
}
