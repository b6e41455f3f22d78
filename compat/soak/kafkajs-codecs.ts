/**
 * kafkajs ships gzip only; snappy, LZ4 and zstd are plug-ins (kafkajs-snappy, kafkajs-lz4,
 * @kafkajs/zstd). Rather than add three packages, the soak registers codecs built on gregor's own
 * protocol/records compression (snappy raw on the way out, as kafkajs-snappy writes it; xerial or raw
 * on the way in), so kafkajs producers can exercise every codec.
 */
import kafkajs from 'kafkajs';
import { CompressionCodec, compress, decompress } from '../../protocol/records/index.js';

const MAX_OUTPUT = 64 << 20;

let registered = false;

export function registerKafkajsCodecs(): void {
  if (registered) return;
  registered = true;
  const codec =
    (id: number, opts: { snappyFraming?: 'raw' | 'xerial' } = {}) =>
    () => ({
      compress: (encoder: { buffer: Buffer }): Promise<Buffer> => Promise.resolve(compress(id, encoder.buffer, opts)),
      decompress: (buffer: Buffer): Promise<Buffer> => Promise.resolve(decompress(id, buffer, { maxOutput: MAX_OUTPUT })),
    });
  const codecs = kafkajs.CompressionCodecs as Record<number, () => unknown>;
  codecs[kafkajs.CompressionTypes.Snappy] = codec(CompressionCodec.SNAPPY, { snappyFraming: 'raw' });
  codecs[kafkajs.CompressionTypes.LZ4] = codec(CompressionCodec.LZ4);
  codecs[kafkajs.CompressionTypes.ZSTD] = codec(CompressionCodec.ZSTD);
}

export const KAFKAJS_CODECS = {
  none: kafkajs.CompressionTypes.None,
  gzip: kafkajs.CompressionTypes.GZIP,
  snappy: kafkajs.CompressionTypes.Snappy,
  lz4: kafkajs.CompressionTypes.LZ4,
  zstd: kafkajs.CompressionTypes.ZSTD,
} as const;
