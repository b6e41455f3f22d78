/** What a fuzz run covered: frames by kind and API, answers and their error codes, log lines per input. */
import { API_KEYS } from '../../protocol/generated/api-keys.js';
import type { FrameSpec } from './model.js';

function bump(m: Record<string, number>, k: string, n = 1): void {
  m[k] = (m[k] ?? 0) + n;
}

/** Every errorCode in a decoded answer (top level and nested). */
function errorCodes(v: unknown, out: number[] = [], depth = 0): number[] {
  if (depth > 6 || typeof v !== 'object' || v === null || Buffer.isBuffer(v)) return out;
  if (Array.isArray(v)) {
    for (const x of v) errorCodes(x, out, depth + 1);
    return out;
  }
  for (const [k, x] of Object.entries(v)) {
    if (k === 'errorCode' && typeof x === 'number') out.push(x);
    else errorCodes(x, out, depth + 1);
  }
  return out;
}

const name = (apiKey: number) => API_KEYS.get(apiKey)?.name ?? `api-${apiKey}`;

export class FuzzStats {
  cases = 0;
  connectRefused = 0;
  readonly frames: Record<string, number> = {};
  readonly actions: Record<string, number> = {};
  /** valid or mutated requests sent, by API name */
  readonly apisSent: Record<string, number> = {};
  /** answers that decoded, by API name */
  readonly apisAnswered: Record<string, number> = {};
  /** answers carrying UNKNOWN_SERVER_ERROR (-1) somewhere, by API name */
  readonly unknownServerErrors: Record<string, number> = {};
  /** broker log lines by message (the fuzz's own inputs' lines) */
  readonly logMessages: Record<string, number> = {};
  /** log lines at level error or above */
  readonly errorLines: string[] = [];
  maxLinesPerCase = 0;
  totalLines = 0;
  totalInputs = 0;

  frame(f: FrameSpec): void {
    bump(this.frames, f.kind);
    if (f.kind === 'valid' || f.kind === 'mutated') bump(this.apisSent, name(f.apiKey));
    if (f.kind === 'produce') bump(this.apisSent, name(0));
  }

  action(op: string): void {
    bump(this.actions, op);
  }

  answer(apiKey: number, body: unknown): void {
    bump(this.apisAnswered, name(apiKey));
    if (errorCodes(body).includes(-1)) bump(this.unknownServerErrors, name(apiKey));
  }

  logLines(lines: readonly string[], inputs: number): void {
    this.totalLines += lines.length;
    this.totalInputs += inputs;
    if (lines.length > this.maxLinesPerCase) this.maxLinesPerCase = lines.length;
    for (const l of lines) {
      let msg = l.slice(0, 80);
      let level = 30;
      try {
        const j = JSON.parse(l) as { msg?: string; level?: number };
        msg = j.msg?.slice(0, 80) ?? msg;
        level = j.level ?? 30;
      } catch {
        // not a JSON log line
      }
      bump(this.logMessages, msg.replace(/\d+/g, 'N'));
      if (level >= 50 && this.errorLines.length < 50) this.errorLines.push(l.slice(0, 600));
    }
  }

  toJSON(): Record<string, unknown> {
    const top = Object.entries(this.logMessages)
      .sort((a, b) => b[1] - a[1])
      .slice(0, 25);
    return {
      cases: this.cases,
      frames: this.frames,
      actions: this.actions,
      apisCovered: Object.keys(this.apisSent).length,
      apisSent: this.apisSent,
      apisAnswered: this.apisAnswered,
      unknownServerErrors: this.unknownServerErrors,
      connectRefused: this.connectRefused,
      logLines: {
        total: this.totalLines,
        inputs: this.totalInputs,
        maxPerCase: this.maxLinesPerCase,
        topMessages: Object.fromEntries(top),
      },
      errorLines: this.errorLines,
    };
  }
}
