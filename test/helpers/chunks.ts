import type { Chunk } from '../../protocol/codec/writer.js';

/** The chunks of an encoding that spliced only buffers (no FileSlice), as buffers; throws otherwise. */
export function buffersOf(chunks: readonly Chunk[]): Buffer[] {
  return chunks.map((c, i) => {
    if (!Buffer.isBuffer(c)) throw new Error(`chunk ${i} is a FileSlice, not a buffer`);
    return c;
  });
}
