/**
 * The soak's record-fate ledger. Every produced record carries `<producer>|<seq>` in its value; the
 * ledger knows, per producer, each record's topic, partition, the offset its acknowledgement gave
 * (or that it failed, so its fate is unknown), and how often each consumer group and the final
 * from-the-start read saw it. Arrays indexed by sequence keep an hour of records small.
 *
 * What may legitimately be missing (TopicKind):
 * - `keep`: nothing. Every acknowledged record is read back exactly once, at its acknowledged offset.
 * - `retained`: records below the partition's final logStartOffset (retention by time or size,
 *   DeleteRecords); everything at or above it is read back exactly once.
 * - `compacted`: records the cleaner may drop: all but the last acknowledged record of each key.
 * A group is at-least-once: it must see every record the final read requires (and those it read
 * before retention removed them); a record a group sees twice is a duplicate the group semantics
 * allow only when a rebalance happened between the two deliveries (a member joined or left, so
 * uncommitted offsets were handed to another member).
 */

export const TopicKind = { keep: 'keep', retained: 'retained', compacted: 'compacted' } as const;
export type TopicKind = (typeof TopicKind)[keyof typeof TopicKind];

const UNACKED = -1;
const FAILED = -2;

class ProducerRecords {
  topic: string[] = [];
  partition: number[] = [];
  /** acknowledged offset; UNACKED while in flight, FAILED when the send failed (fate unknown) */
  offset: number[] = [];
  key: (string | null)[] = [];
  /** records acknowledged so far */
  acks = 0;
  constructor(readonly name: string) {}
}

interface GroupSeen {
  /** per producer: deliveries of each sequence */
  count: Map<string, number[]>;
  /** per producer: the group's rebalance epoch at the last delivery */
  epoch: Map<string, number[]>;
  rebalances: number;
  deliveries: number;
  explainedDuplicates: number;
  unexplainedDuplicates: number;
  unexplainedExamples: string[];
}

export interface FinalRead {
  /** topic -> partition -> logStartOffset at the end */
  logStartOffsets: Map<string, number[]>;
}

export interface GroupVerdict {
  group: string;
  deliveries: number;
  rebalances: number;
  missing: number;
  missingExamples: string[];
  explainedDuplicates: number;
  unexplainedDuplicates: number;
  unexplainedExamples: string[];
}

export interface Verdict {
  produced: number;
  acked: number;
  failedSends: number;
  /** acked records the final read had to find and did not */
  lost: number;
  lostExamples: string[];
  /** records the final read saw more than once */
  duplicatedInLog: number;
  duplicateExamples: string[];
  /** records read at an offset other than the acknowledged one */
  offsetMismatches: number;
  mismatchExamples: string[];
  /** records read that were never produced by this soak */
  unknownRecords: number;
  /** acked records legitimately gone: below logStartOffset or compacted away */
  removedByRetention: number;
  removedByCompaction: number;
  groups: GroupVerdict[];
  ok: boolean;
}

const MAX_EXAMPLES = 10;
const push = (xs: string[], s: string): void => {
  if (xs.length < MAX_EXAMPLES) xs.push(s);
};

/** The two per-sequence arrays two maps keep for `producer`, created empty on first use. */
function arraysOf(a: Map<string, number[]>, b: Map<string, number[]>, producer: string): [number[], number[]] {
  let x = a.get(producer);
  let y = b.get(producer);
  if (x === undefined || y === undefined) {
    x = [];
    y = [];
    a.set(producer, x);
    b.set(producer, y);
  }
  return [x, y];
}

/** `<producer>|<seq>|` then padding: the value every soak record carries. */
export function recordValue(producer: string, seq: number, padTo: number): Buffer {
  const head = `${producer}|${seq}|`;
  return Buffer.from(head.padEnd(Math.max(padTo, head.length + 1), '.'));
}

export function parseRecordValue(value: Buffer | null): { producer: string; seq: number } | null {
  if (value === null) return null;
  const s = value.toString('latin1', 0, Math.min(value.length, 64));
  const a = s.indexOf('|');
  const b = s.indexOf('|', a + 1);
  if (a <= 0 || b <= a) return null;
  const seq = Number(s.slice(a + 1, b));
  return Number.isSafeInteger(seq) ? { producer: s.slice(0, a), seq } : null;
}

export class Ledger {
  private readonly producers = new Map<string, ProducerRecords>();
  private readonly kinds = new Map<string, TopicKind>();
  private readonly ackedPerTopic = new Map<string, number>();
  private readonly groups = new Map<string, GroupSeen>();
  /** final read: per producer, sightings (count) and the offset of the first sighting */
  private readonly finalCount = new Map<string, number[]>();
  private readonly finalOffset = new Map<string, number[]>();
  private finalUnknown = 0;
  private finalDuplicates: string[] = [];
  private finalDuplicateCount = 0;

  topic(name: string, kind: TopicKind): void {
    this.kinds.set(name, kind);
  }

  kindOf(topic: string): TopicKind | undefined {
    return this.kinds.get(topic);
  }

  private producer(name: string): ProducerRecords {
    let p = this.producers.get(name);
    if (p === undefined) {
      p = new ProducerRecords(name);
      this.producers.set(name, p);
    }
    return p;
  }

  /** A record is about to be sent; returns its sequence. */
  sent(producer: string, topic: string, partition: number, key: string | null = null): number {
    const p = this.producer(producer);
    const seq = p.offset.length;
    p.topic.push(topic);
    p.partition.push(partition);
    p.offset.push(UNACKED);
    p.key.push(key);
    return seq;
  }

  acked(producer: string, seq: number, offset: number): void {
    const p = this.producer(producer);
    if (seq >= p.offset.length) throw new Error(`ack for unsent ${producer}|${seq}`);
    if ((p.offset[seq] ?? UNACKED) < 0) {
      p.acks++;
      const topic = p.topic[seq] ?? '';
      this.ackedPerTopic.set(topic, (this.ackedPerTopic.get(topic) ?? 0) + 1);
    }
    p.offset[seq] = offset;
  }

  /** Records of `producer` acknowledged so far (cheap: for the stall watchdog). */
  ackedBy(producer: string): number {
    return this.producers.get(producer)?.acks ?? 0;
  }

  /** Records acknowledged so far on `topics` (cheap: for the stall watchdog). */
  ackedOn(topics: readonly string[]): number {
    return topics.reduce((n, t) => n + (this.ackedPerTopic.get(t) ?? 0), 0);
  }

  failed(producer: string, seq: number): void {
    const p = this.producer(producer);
    if (p.offset[seq] === UNACKED) p.offset[seq] = FAILED;
  }

  /** Counts: [produced, acked, failed, in flight]. */
  counts(): { produced: number; acked: number; failed: number; inFlight: number } {
    let produced = 0;
    let acked = 0;
    let failed = 0;
    for (const p of this.producers.values())
      for (const o of p.offset) {
        produced++;
        if (o >= 0) acked++;
        else if (o === FAILED) failed++;
      }
    return { produced, acked, failed, inFlight: produced - acked - failed };
  }

  private group(name: string): GroupSeen {
    let g = this.groups.get(name);
    if (g === undefined) {
      g = {
        count: new Map(),
        epoch: new Map(),
        rebalances: 0,
        deliveries: 0,
        explainedDuplicates: 0,
        unexplainedDuplicates: 0,
        unexplainedExamples: [],
      };
      this.groups.set(name, g);
    }
    return g;
  }

  /** A member of `group` joined, left or had its assignment changed. */
  rebalanced(group: string): void {
    this.group(group).rebalances++;
  }

  /** A group member delivered a record (value as produced). */
  consumed(group: string, topic: string, partition: number, offset: number, value: Buffer | null): void {
    const g = this.group(group);
    g.deliveries++;
    const id = parseRecordValue(value);
    if (id === null) return;
    const [counts, epochs] = arraysOf(g.count, g.epoch, id.producer);
    const n = counts[id.seq] ?? 0;
    counts[id.seq] = n + 1;
    if (n > 0) {
      if (epochs[id.seq] === g.rebalances) {
        g.unexplainedDuplicates++;
        push(g.unexplainedExamples, `${id.producer}|${id.seq} at ${topic}/${partition}@${offset}`);
      } else g.explainedDuplicates++;
    }
    epochs[id.seq] = g.rebalances;
  }

  groupDeliveries(group: string): number {
    return this.groups.get(group)?.deliveries ?? 0;
  }

  /** The final from-the-start read saw a record. */
  read(topic: string, partition: number, offset: number, value: Buffer | null): void {
    const id = parseRecordValue(value);
    const p = id === null ? undefined : this.producers.get(id.producer);
    if (id === null || p === undefined || id.seq >= p.offset.length || p.topic[id.seq] !== topic || p.partition[id.seq] !== partition) {
      this.finalUnknown++;
      return;
    }
    const [counts, offsets] = arraysOf(this.finalCount, this.finalOffset, id.producer);
    const n = counts[id.seq] ?? 0;
    counts[id.seq] = n + 1;
    if (n === 0) offsets[id.seq] = offset;
    else {
      this.finalDuplicateCount++;
      push(this.finalDuplicates, `${id.producer}|${id.seq} at ${topic}/${partition}@${offsets[id.seq] ?? '?'} and @${offset}`);
    }
  }

  /** Whether the final read must find this acked record, and why not when it need not. */
  private required(p: ProducerRecords, seq: number, fin: FinalRead, lastOfKey: Map<string, number>): 'yes' | 'retention' | 'compaction' {
    const topic = p.topic[seq] ?? '';
    const partition = p.partition[seq] ?? 0;
    const offset = p.offset[seq] ?? -1;
    const kind = this.kinds.get(topic) ?? TopicKind.keep;
    if (kind === TopicKind.retained && offset < (fin.logStartOffsets.get(topic)?.[partition] ?? 0)) return 'retention';
    if (kind === TopicKind.compacted) {
      const k = `${topic}/${partition}/${p.key[seq] ?? ''}`;
      if (lastOfKey.get(k) !== offset) return 'compaction';
    }
    return 'yes';
  }

  /** The verdict once the final read is done. `groupTopics`: group -> topics it subscribed to. */
  verdict(fin: FinalRead, groupTopics: Map<string, readonly string[]>): Verdict {
    // the highest acknowledged offset of each key of the compacted topics
    const lastOfKey = new Map<string, number>();
    for (const p of this.producers.values())
      p.offset.forEach((o, seq) => {
        const topic = p.topic[seq] ?? '';
        if (o < 0 || this.kinds.get(topic) !== TopicKind.compacted) return;
        const k = `${topic}/${p.partition[seq] ?? 0}/${p.key[seq] ?? ''}`;
        if ((lastOfKey.get(k) ?? -1) < o) lastOfKey.set(k, o);
      });
    const v: Verdict = {
      produced: 0,
      acked: 0,
      failedSends: 0,
      lost: 0,
      lostExamples: [],
      duplicatedInLog: this.finalDuplicateCount,
      duplicateExamples: this.finalDuplicates,
      offsetMismatches: 0,
      mismatchExamples: [],
      unknownRecords: this.finalUnknown,
      removedByRetention: 0,
      removedByCompaction: 0,
      groups: [],
      ok: false,
    };
    const groupVerdicts = new Map<string, GroupVerdict>();
    for (const [name, g] of this.groups)
      groupVerdicts.set(name, {
        group: name,
        deliveries: g.deliveries,
        rebalances: g.rebalances,
        missing: 0,
        missingExamples: [],
        explainedDuplicates: g.explainedDuplicates,
        unexplainedDuplicates: g.unexplainedDuplicates,
        unexplainedExamples: g.unexplainedExamples,
      });
    for (const p of this.producers.values()) {
      const seen = this.finalCount.get(p.name) ?? [];
      const at = this.finalOffset.get(p.name) ?? [];
      p.offset.forEach((o, seq) => {
        v.produced++;
        if (o === FAILED) v.failedSends++;
        if (o < 0) return;
        v.acked++;
        const id = `${p.name}|${seq} (${p.topic[seq] ?? '?'}/${p.partition[seq] ?? '?'}@${o})`;
        const found = (seen[seq] ?? 0) > 0;
        if (found && at[seq] !== o) {
          v.offsetMismatches++;
          push(v.mismatchExamples, `${id} read at ${at[seq] ?? '?'}`);
        }
        const need = this.required(p, seq, fin, lastOfKey);
        if (need === 'retention' && !found) v.removedByRetention++;
        if (need === 'compaction' && !found) v.removedByCompaction++;
        if (need === 'yes' && !found) {
          v.lost++;
          push(v.lostExamples, id);
        }
        // groups: what the final read requires (or what retention removed after the group could read it)
        if (need === 'compaction') return;
        for (const [group, topics] of groupTopics) {
          if (!topics.includes(p.topic[seq] ?? '')) continue;
          const gv = groupVerdicts.get(group);
          const count = this.groups.get(group)?.count.get(p.name)?.[seq] ?? 0;
          if (gv !== undefined && count === 0 && need === 'yes') {
            gv.missing++;
            push(gv.missingExamples, id);
          }
        }
      });
    }
    for (const group of groupTopics.keys())
      if (!groupVerdicts.has(group))
        groupVerdicts.set(group, {
          group,
          deliveries: 0,
          rebalances: 0,
          missing: 0,
          missingExamples: [],
          explainedDuplicates: 0,
          unexplainedDuplicates: 0,
          unexplainedExamples: [],
        });
    v.groups = [...groupVerdicts.values()].filter((g) => groupTopics.has(g.group));
    v.ok =
      v.lost === 0 &&
      v.duplicatedInLog === 0 &&
      v.offsetMismatches === 0 &&
      v.unknownRecords === 0 &&
      v.groups.every((g) => g.missing === 0 && g.unexplainedDuplicates === 0);
    return v;
  }
}
