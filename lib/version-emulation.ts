/**
 * `broker.version.emulate=<release>`: advertise exactly the API version ranges an older Kafka release
 * did, so client suites can test against old brokers (e.g. 0.10.0 makes librdkafka and kafka-python fall
 * back to Produce v2 / message format 1). Each release is the previous one plus its changes, as
 * `apiKey: newMax` (a new API starts at its max; minimums are 0 for all of these releases).
 */

type Delta = Record<number, number>;

const RELEASE_DELTAS: [string, Delta][] = [
  // Produce, Fetch, ListOffsets, Metadata, OffsetCommit, OffsetFetch, FindCoordinator, JoinGroup, Heartbeat,
  // LeaveGroup, SyncGroup, DescribeGroups, ListGroups, SaslHandshake, ApiVersions (inter-broker APIs left out).
  ['0.10.0', { 0: 2, 1: 2, 2: 0, 3: 1, 8: 2, 9: 1, 10: 0, 11: 0, 12: 0, 13: 0, 14: 0, 15: 0, 16: 0, 17: 0, 18: 0 }],
  ['0.10.1', { 1: 3, 2: 1, 3: 2, 11: 1, 19: 0, 20: 0 }],
  ['0.10.2', { 9: 2, 19: 1 }],
  [
    '0.11.0',
    {
      0: 3,
      1: 5,
      2: 2,
      3: 4,
      8: 3,
      9: 3,
      10: 1,
      11: 2,
      12: 1,
      13: 1,
      14: 1,
      15: 1,
      16: 1,
      18: 1,
      19: 2,
      20: 1,
      21: 0,
      22: 0,
      23: 0,
      24: 0,
      25: 0,
      26: 0,
      28: 0,
      29: 0,
      30: 0,
      31: 0,
      32: 0,
      33: 0,
    },
  ],
  ['1.0', { 0: 5, 1: 6, 3: 5, 17: 1, 34: 0, 35: 0, 36: 0, 37: 0 }],
  ['1.1', { 1: 7, 32: 1, 42: 0 }],
  [
    '2.0',
    {
      0: 6,
      1: 8,
      2: 3,
      3: 6,
      8: 4,
      9: 4,
      10: 2,
      11: 3,
      12: 2,
      13: 2,
      14: 2,
      15: 2,
      16: 2,
      18: 2,
      19: 3,
      20: 2,
      21: 1,
      22: 1,
      23: 1,
      24: 1,
      25: 1,
      26: 1,
      28: 1,
      29: 1,
      30: 1,
      31: 1,
      32: 2,
      33: 1,
      34: 1,
      35: 1,
      37: 1,
      42: 1,
    },
  ],
  ['2.1', { 0: 7, 1: 10, 2: 4, 3: 7, 8: 6, 9: 5, 20: 3, 23: 2, 28: 2 }],
  ['2.2', { 2: 5, 11: 4, 36: 1, 43: 0 }],
  ['2.3', { 1: 11, 3: 8, 8: 7, 11: 5, 12: 3, 14: 3, 15: 3, 23: 3, 44: 0 }],
  [
    '2.4',
    {
      0: 8,
      3: 9,
      8: 8,
      9: 6,
      10: 3,
      11: 6,
      12: 4,
      13: 4,
      14: 4,
      15: 5,
      16: 3,
      18: 3,
      19: 5,
      20: 4,
      22: 2,
      42: 2,
      43: 2,
      44: 1,
      45: 0,
      46: 0,
      47: 0,
    },
  ],
  ['2.5', { 9: 7, 11: 7, 14: 5, 22: 3, 28: 3, 29: 2, 30: 2, 31: 2, 36: 2, 37: 2 }],
  ['2.6', { 16: 4, 21: 2, 32: 3, 35: 2, 48: 0, 49: 0 }],
  ['2.7', { 1: 12, 19: 6, 20: 5, 22: 4, 24: 2, 25: 2, 26: 2, 37: 3, 50: 0, 51: 0 }],
  ['2.8', { 0: 9, 2: 6, 3: 11, 19: 7, 20: 6, 23: 4, 24: 3, 25: 3, 26: 3, 32: 4, 33: 2, 34: 2, 48: 1, 49: 1, 60: 0, 61: 0 }],
];

export const EMULATED_RELEASES: readonly string[] = RELEASE_DELTAS.map(([r]) => r);

/** Normalises "0.10.0.1", "2.0.0" or "2.0" to a release key of the table; undefined when unknown. */
export function normaliseRelease(release: string): string | undefined {
  const parts = release.trim().split('.');
  const candidates = [parts.slice(0, 3).join('.'), parts.slice(0, 2).join('.')];
  return candidates.find((c) => EMULATED_RELEASES.includes(c));
}

/** Max version per API key that `release` advertised; undefined when the release is not in the table. */
export function emulatedMaxVersions(release: string): Map<number, number> | undefined {
  const key = normaliseRelease(release);
  if (key === undefined) return undefined;
  const out = new Map<number, number>();
  for (const [r, delta] of RELEASE_DELTAS) {
    for (const [k, v] of Object.entries(delta)) out.set(Number(k), v);
    if (r === key) return out;
  }
  return out;
}
