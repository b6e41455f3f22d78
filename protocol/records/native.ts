/**
 * The native (and other heavy) modules of the record path, loaded on first use rather than at
 * import: a broker that never sees a compressed batch never loads a codec, and start-up does not pay
 * for them (each costs 10-30 ms to load). They are CommonJS packages, so a synchronous require
 * works wherever they are needed.
 */
import { createRequire } from 'node:module';

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

/** CRC-32C (Castagnoli) of `data`, as record batches (magic 2) carry it. */
export function crc32c(data: Buffer | Uint8Array): number {
  return crc32Module().crc32c(data);
}

/** CRC-32 (IEEE) of `data`, as legacy messages (magic 0/1) carry it. */
export function crc32(data: Buffer | Uint8Array): number {
  return crc32Module().crc32(data);
}
