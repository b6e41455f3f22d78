// Shared by capture-all.mjs (mock cluster) and capture-gregor.mjs (gregor itself): the plan of
// records each driver sends, frame deduplication, and the (apiKey, version) summary.
export const MAX_PER_GROUP = 3;

export const API_NAMES = {
  0: 'Produce',
  1: 'Fetch',
  2: 'ListOffsets',
  3: 'Metadata',
  8: 'OffsetCommit',
  9: 'OffsetFetch',
  10: 'FindCoordinator',
  11: 'JoinGroup',
  12: 'Heartbeat',
  13: 'LeaveGroup',
  14: 'SyncGroup',
  15: 'DescribeGroups',
  16: 'ListGroups',
  17: 'SaslHandshake',
  18: 'ApiVersions',
  19: 'CreateTopics',
  20: 'DeleteTopics',
  21: 'DeleteRecords',
  22: 'InitProducerId',
  23: 'OffsetForLeaderEpoch',
  32: 'DescribeConfigs',
  33: 'AlterConfigs',
  36: 'SaslAuthenticate',
  37: 'CreatePartitions',
  42: 'DeleteGroups',
  44: 'IncrementalAlterConfigs',
  47: 'OffsetDelete',
  60: 'DescribeCluster',
  68: 'ConsumerGroupHeartbeat',
  69: 'ConsumerGroupDescribe',
  75: 'DescribeTopicPartitions',
};
export const CODEC_IDS = { 0: 'none', 1: 'gzip', 2: 'snappy', 3: 'lz4', 4: 'zstd' };

// ---------------------------------------------------------------------------------------------
// What each driver sends. Records are small; keys/values/headers are UTF-8 strings.
export function makeBatches(client, codecs, { headers = true, acks = [1], nullKey = true, kcatHeaders = false } = {}) {
  const batches = [];
  let i = 0;
  for (const codec of codecs) {
    for (const a of acks) {
      const records = [];
      for (let r = 0; r < 3; r++) {
        const key = nullKey && codec === 'none' && r === 2 ? null : `${client}-${codec}-key-${r}`;
        const value = `${codec} record ${r} from ${client}: ` + 'golden '.repeat(3).trim();
        let hdrs = [];
        if (kcatHeaders) {
          hdrs = [
            { key: 'codec', value: codec },
            { key: 'client', value: client },
          ];
        } else if (headers) {
          hdrs = [
            { key: 'codec', value: codec },
            { key: 'n', value: String(r) },
          ];
          if (r === 1) hdrs.push({ key: 'n', value: 'duplicate header key' });
        }
        records.push({ key, value, headers: hdrs });
      }
      batches.push({ codec, acks: a, partition: i % 3, records });
      i++;
    }
  }
  return batches;
}

export function normalizedKey(f) {
  const b = Buffer.from(f.bytes);
  b.writeInt32BE(0, f.direction === 'request' ? 4 : 0);
  return `${f.direction}|${f.apiKey}|${f.apiVersion}|${b.toString('hex')}`;
}

export function dedupe(frames) {
  const seen = new Set();
  const perGroup = new Map();
  const kept = new Set();
  const take = (f, group, max = MAX_PER_GROUP) => {
    const k = normalizedKey(f);
    if (seen.has(k)) return;
    const n = perGroup.get(group) ?? 0;
    if (n >= max) return;
    seen.add(k);
    perGroup.set(group, n + 1);
    kept.add(f.seq);
  };
  for (const f of frames) {
    if (f.direction !== 'request') continue;
    let group = `${f.direction}|${f.apiKey}|${f.apiVersion}`;
    if (f.apiKey === 0 && f.produce) group += `|${f.produce.acks}|${f.produce.entries.map((e) => e.codec).join(',')}`;
    take(f, group);
  }
  // Responses: every distinct answer to a kept request (so Produce answers for each codec stay),
  // then fill up to MAX_PER_GROUP with other distinct responses.
  const responses = frames.filter((f) => f.direction === 'response');
  const groupOf = (f) => `${f.direction}|${f.apiKey}|${f.apiVersion}`;
  for (const f of responses) if (kept.has(f.requestSeq)) take(f, groupOf(f), Infinity);
  for (const f of responses) if (!kept.has(f.requestSeq)) take(f, groupOf(f));
  return frames.filter((f) => kept.has(f.seq));
}

export function pairsOf(frames, direction) {
  const s = new Set(frames.filter((f) => f.direction === direction).map((f) => `${f.apiKey}v${f.apiVersion}`));
  return [...s].sort((a, b) => {
    const [ak, av] = a.split('v').map(Number);
    const [bk, bv] = b.split('v').map(Number);
    return ak - bk || av - bv;
  });
}

export function fmtPairs(pairs) {
  return pairs
    .map((p) => {
      const [k, v] = p.split('v');
      return `${API_NAMES[k] ?? k}(${k}) v${v}`;
    })
    .join(', ');
}
