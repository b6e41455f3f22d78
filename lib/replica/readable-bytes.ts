/**
 * How many bytes a leader's high watermark move makes readable to consumers: the leader notes the
 * log's size each time its written end moves (`written`), and a move of the high watermark past such
 * marks (`committed`) counts the bytes between them. A consumer's long poll adds these up toward its
 * min_bytes, as Kafka's DelayedFetch counts the bytes between the fetch offset and the high
 * watermark.
 */
/** Marks kept above the high watermark at most (a stuck ISR): the oldest go, which only coarsens the counts. */
const MAX_MARKS = 4096;

export class ReadableBytes {
  private ends: bigint[] = [];
  private sizes: number[] = [];
  private head = 0;
  /** the log's size at the last mark the high watermark passed */
  private committedSize = -1;

  /** A leadership begins with `logSize` bytes in the log (the baseline of the first count). */
  start(logSize: number): void {
    this.reset();
    this.committedSize = logSize;
  }

  /** The log's written end moved to `endOffset`, with `logSize` bytes in the log. */
  written(endOffset: bigint, logSize: number): void {
    if (this.ends.length - this.head >= MAX_MARKS) this.dropPassed(this.head + 1);
    this.ends.push(endOffset);
    this.sizes.push(logSize);
  }

  /**
   * The high watermark moved forward to `highWatermark`: the bytes that became readable. At least 1
   * (a move makes a record readable, even one not yet between two marks), and the marks it passed
   * are dropped.
   */
  committed(highWatermark: bigint): number {
    let size = -1;
    let head = this.head;
    while (head < this.ends.length && this.ends[head]! <= highWatermark) size = this.sizes[head++]!;
    this.dropPassed(head);
    if (size < 0) return 1;
    const before = this.committedSize;
    this.committedSize = size;
    // a log that shrank (retention, truncation) meanwhile: no baseline
    return before < 0 || size <= before ? 1 : size - before;
  }

  /** Forgets the marks before index `head`. */
  private dropPassed(head: number): void {
    this.head = head;
    if (head > 64 && head * 2 > this.ends.length) {
      this.ends = this.ends.slice(head);
      this.sizes = this.sizes.slice(head);
      this.head = 0;
    }
  }

  /** The log was truncated or restarted: the marks no longer describe it. */
  reset(): void {
    this.ends = [];
    this.sizes = [];
    this.head = 0;
    this.committedSize = -1;
  }
}
