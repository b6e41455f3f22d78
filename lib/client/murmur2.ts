/** Kafka's murmur2 (Utils.murmur2) and the default partitioner's choice for a keyed record. */

export function murmur2(data: Uint8Array): number {
  const length = data.length;
  const m = 0x5bd1e995;
  let h = 0x9747b28c ^ length;
  const length4 = length >>> 2;
  for (let i = 0; i < length4; i++) {
    const i4 = i * 4;
    let k = (data[i4] as number) | ((data[i4 + 1] as number) << 8) | ((data[i4 + 2] as number) << 16) | ((data[i4 + 3] as number) << 24);
    k = Math.imul(k, m);
    k ^= k >>> 24;
    k = Math.imul(k, m);
    h = Math.imul(h, m);
    h ^= k;
  }
  const tail = length & ~3;
  const rem = length & 3;
  if (rem === 3) h ^= (data[tail + 2] as number) << 16;
  if (rem >= 2) h ^= (data[tail + 1] as number) << 8;
  if (rem >= 1) {
    h ^= data[tail] as number;
    h = Math.imul(h, m);
  }
  h ^= h >>> 13;
  h = Math.imul(h, m);
  h ^= h >>> 15;
  return h | 0;
}

/** The partition Kafka's default partitioner gives a key: toPositive(murmur2(key)) % partitions. */
export function partitionForKey(key: Uint8Array, partitions: number): number {
  return (murmur2(key) & 0x7fffffff) % partitions;
}
