/** A one-line progress counter on stderr, only when stderr is a terminal (never in pipes or CI logs). */

function human(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = bytes / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(1)} ${units[i]}`;
}

export class Progress {
  private records = 0;
  private bytes = 0;
  private readonly started = Date.now();
  private last = 0;
  private shown = false;
  readonly enabled: boolean;

  constructor(
    private readonly verb: string,
    private readonly stream: NodeJS.WriteStream = process.stderr,
    enabled?: boolean,
  ) {
    this.enabled = enabled ?? stream.isTTY;
  }

  add(records: number, bytes: number): void {
    this.records += records;
    this.bytes += bytes;
    if (!this.enabled) return;
    const now = Date.now();
    if (now - this.last < 200) return;
    this.last = now;
    this.render(now);
  }

  private render(now: number): void {
    const secs = Math.max((now - this.started) / 1000, 0.001);
    const rate = Math.round(this.records / secs);
    this.stream.write(
      `\r\x1b[K${this.verb} ${this.records.toLocaleString('en-US')} records, ${human(this.bytes)} (${rate.toLocaleString('en-US')}/s)`,
    );
    this.shown = true;
  }

  /** Prints the final count (when anything was shown) and ends the line. */
  done(): void {
    if (!this.enabled || !this.shown) return;
    this.render(Date.now());
    this.stream.write('\n');
  }
}
