/** Codec names as clients spell them, and the ids stored in a batch's attributes. */
import { CompressionCodec } from '../../protocol/records/index.js';

export const CODECS = ['none', 'gzip', 'snappy', 'lz4', 'zstd'] as const;
export type Codec = (typeof CODECS)[number];
export const CODEC_ID: Record<Codec, number> = {
  none: CompressionCodec.NONE,
  gzip: CompressionCodec.GZIP,
  snappy: CompressionCodec.SNAPPY,
  lz4: CompressionCodec.LZ4,
  zstd: CompressionCodec.ZSTD,
};
