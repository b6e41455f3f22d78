/**
 * What each console API call costs the broker: wall time from the request's arrival at the console
 * to its response headers, and the process's CPU time over the same span (the handler's own work
 * when it does not wait; when it waits, the CPU of whatever else ran meanwhile is counted too). Sent
 * on every answer as a `Server-Timing` header (`app;dur=<ms>, cpu;dur=<ms>`: the browser's Resource
 * Timing shows it beside the bytes of each call) and kept per route (the last SAMPLES calls) for
 * GET /ui/api/timings. A live tail counts until its stream starts.
 */
import type { ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';

/** calls kept per route */
const SAMPLES = 64;

interface RouteSamples {
  calls: number;
  wallMs: number[];
  cpuMs: number[];
  bytes: number[];
}

export interface RouteTiming {
  route: string;
  calls: number;
  /** over the last SAMPLES calls */
  medianWallMs: number;
  maxWallMs: number;
  medianCpuMs: number;
  medianBytes: number;
}

const round2 = (x: number): number => Math.round(x * 100) / 100;
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const push = (xs: number[], x: number): void => {
  xs.push(x);
  if (xs.length > SAMPLES) xs.shift();
};

/** `/^\/topics\/([^/]+)\/messages$/` → `/topics/:p/messages` */
export function routeName(method: string, path: RegExp): string {
  const p = path.source
    .replace(/^\^|\$$/g, '')
    .replace(/\(\[\^\/\]\+\)/g, ':p')
    .replace(/\\\//g, '/');
  return `${method} ${p}`;
}

export class ConsoleTimings {
  private readonly routes = new Map<string, RouteSamples>();

  /** Starts timing `res`: its Server-Timing header is set when its headers go, and the route's samples then. */
  start(res: ServerResponse, route: string): void {
    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    const writeHead = res.writeHead.bind(res) as (...a: unknown[]) => ServerResponse;
    const timed = (...args: unknown[]): ServerResponse => {
      const wall = performance.now() - t0;
      const c = process.cpuUsage(cpu0);
      const cpu = (c.user + c.system) / 1000;
      if (!res.headersSent) res.setHeader('server-timing', `app;dur=${round2(wall)}, cpu;dur=${round2(cpu)}`);
      const headers = args.find((a): a is Record<string, unknown> => typeof a === 'object' && a !== null && !Array.isArray(a));
      const length = Number(headers?.['content-length'] ?? NaN);
      this.record(route, wall, cpu, Number.isFinite(length) ? length : 0);
      return writeHead(...args);
    };
    res.writeHead = timed;
  }

  private record(route: string, wallMs: number, cpuMs: number, bytes: number): void {
    let r = this.routes.get(route);
    if (r === undefined) this.routes.set(route, (r = { calls: 0, wallMs: [], cpuMs: [], bytes: [] }));
    r.calls++;
    push(r.wallMs, wallMs);
    push(r.cpuMs, cpuMs);
    push(r.bytes, bytes);
  }

  snapshot(): RouteTiming[] {
    return [...this.routes]
      .map(([route, r]) => ({
        route,
        calls: r.calls,
        medianWallMs: round2(median(r.wallMs)),
        maxWallMs: round2(Math.max(0, ...r.wallMs)),
        medianCpuMs: round2(median(r.cpuMs)),
        medianBytes: median(r.bytes),
      }))
      .sort((a, b) => a.route.localeCompare(b.route));
  }
}
