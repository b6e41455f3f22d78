/**
 * Marks a reader leaves on a log until the log's next announced change: a follower's fetch session
 * marks each partition it found idle and skips it until its log announces a change
 * (lib/handlers/fetch-replica.ts). The log keeps one list; a change clears every mark in it at once.
 */

/** A reader's mark on a log. */
export interface ChangeMark {
  /** the log it was marked idle on; null once that log announced a change (or the reader cleared it) */
  idleOn: object | null;
  /** the log it is listed on (cleared with the listing) */
  listedOn: object | null;
  /** told when a change clears the mark (a fetch session counts them) */
  readonly holder: { markCleared(): void } | null;
}

/** The marks of one log (`owner`). */
export class ChangeMarks {
  private marks: ChangeMark[] | null = null;

  constructor(private readonly owner: object) {}

  /** Marks `m` idle on the owner until its next change; listed once however often it is marked. */
  mark(m: ChangeMark): void {
    m.idleOn = this.owner;
    if (m.listedOn === this.owner) return;
    m.listedOn = this.owner;
    (this.marks ??= []).push(m);
  }

  /** The owner changed: clears every mark left on it. */
  changed(): void {
    const marks = this.marks;
    if (marks === null) return;
    this.marks = null;
    for (const m of marks) {
      if (m.listedOn !== this.owner) continue; // listed since on another log
      m.listedOn = null;
      if (m.idleOn === this.owner) {
        m.idleOn = null;
        m.holder?.markCleared();
      }
    }
  }
}
