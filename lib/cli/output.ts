/**
 * Writing results: aligned tables with upper-case headers (cli-table3, borderless, as rpk prints),
 * "KEY value" sections, and JSON. stdout closing early (`| head`) ends the command quietly.
 */
import Table from 'cli-table3';

export type OutputFormat = 'text' | 'json';

/** Cells print as given; null and undefined as "-". */
export type Cell = string | number | bigint | boolean | null | undefined;

const BORDERLESS = {
  top: '',
  'top-mid': '',
  'top-left': '',
  'top-right': '',
  bottom: '',
  'bottom-mid': '',
  'bottom-left': '',
  'bottom-right': '',
  left: '',
  'left-mid': '',
  mid: '',
  'mid-mid': '',
  right: '',
  'right-mid': '',
  middle: '  ',
};

function cellText(c: Cell): string {
  if (c === null || c === undefined) return '-';
  return String(c);
}

/** A borderless table: header row, then rows, columns two spaces apart, no trailing blanks. */
export function renderTable(head: readonly string[], rows: readonly (readonly Cell[])[]): string {
  const t = new Table({ head: [...head], chars: BORDERLESS, style: { head: [], border: [], 'padding-left': 0, 'padding-right': 0 } });
  for (const r of rows) t.push(r.map(cellText));
  return t
    .toString()
    .split('\n')
    .map((l) => l.trimEnd())
    .join('\n');
}

/** "KEY  value" lines, keys aligned (no header). */
export function renderPairs(pairs: readonly (readonly [string, Cell])[]): string {
  const t = new Table({ chars: BORDERLESS, style: { head: [], border: [], 'padding-left': 0, 'padding-right': 0 } });
  for (const [k, v] of pairs) t.push([k, cellText(v)]);
  return t
    .toString()
    .split('\n')
    .map((l) => l.trimEnd())
    .join('\n');
}

/** A section title underlined, as rpk prints them. */
export function heading(title: string): string {
  return `${title}\n${'='.repeat(title.length)}`;
}

/** "[1 2 3]"-style lists for node ids. */
export function idList(ids: readonly number[]): string {
  return `[${ids.join(' ')}]`;
}

/** JSON with bigints as numbers (offsets fit in 2^53 in practice) — or as strings past that. */
export function toJson(value: unknown, pretty = true): string {
  return JSON.stringify(
    value,
    (_k, v: unknown) =>
      typeof v === 'bigint' ? (v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(v) : v.toString()) : v,
    pretty ? 2 : undefined,
  );
}

/** stdout for command results. */
export class Output {
  /** stdout was closed by the reader (EPIPE): stop producing output */
  closed = false;
  private readonly closeWaiters: (() => void)[] = [];

  constructor(private readonly stream: NodeJS.WriteStream = process.stdout) {
    stream.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'EPIPE') {
        this.closed = true;
        for (const w of this.closeWaiters.splice(0)) w();
      } else throw e;
    });
  }

  /** Resolves when the reader goes away (for long consumes). */
  onClose(fn: () => void): void {
    if (this.closed) fn();
    else this.closeWaiters.push(fn);
  }

  write(data: string | Buffer): boolean {
    if (this.closed) return false;
    return this.stream.write(data);
  }

  line(text = ''): void {
    this.write(`${text}\n`);
  }

  json(value: unknown): void {
    this.line(toJson(value));
  }

  /** Waits until the stream's buffer drained (backpressure for big consumes). */
  drain(): Promise<void> {
    if (this.closed || !this.stream.writableNeedDrain) return Promise.resolve();
    return new Promise((resolve) => {
      this.stream.once('drain', resolve);
      this.onClose(resolve);
    });
  }
}
