/**
 * CPU of a process tree and of the whole machine, from /proc, for benches that must say where a
 * 2-core machine's time went (issue 19: the broker, the producer, and headless Chromium's browser,
 * renderer, GPU and utility processes while a page tails a topic).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { clkTck, threadCpu } from './proc-stats.js';

/** One process of a tree: its CPU so far (utime + stime of all its threads, exited ones included). */
export interface ProcCpu {
  pid: number;
  comm: string;
  /** Chromium's `--type=` (renderer, gpu-process, utility, zygote, ...); `browser` for the main one; `` for others */
  kind: string;
  cpuSeconds: number;
}

function statFields(pid: number): { comm: string; ppid: number; cpuSeconds: number } | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null; // gone meanwhile
  }
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // rest[0] is field 3 (state): ppid is field 4, utime 14, stime 15
  return {
    comm: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')),
    ppid: Number(rest[4 - 3]),
    cpuSeconds: (Number(rest[14 - 3]) + Number(rest[15 - 3])) / clkTck(),
  };
}

function chromiumKind(pid: number, comm: string): string {
  let cmd: string;
  try {
    cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return '';
  }
  // the zygote's children set their title: their arguments are then joined by spaces, not NULs
  const type = /[\0 ]--type=([^\0 ]+)/.exec(cmd)?.[1];
  if (type !== undefined) return type;
  return /chrom/i.test(comm) ? 'browser' : '';
}

/** The processes below `root` (not `root` itself) whose own subtree does not start at one of `exclude`. */
export function descendantsCpu(root: number, exclude: readonly number[] = []): ProcCpu[] {
  const children = new Map<number, number[]>();
  const info = new Map<number, { comm: string; cpuSeconds: number }>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const pid = Number(d);
    const s = statFields(pid);
    if (s === null) continue;
    info.set(pid, s);
    const list = children.get(s.ppid);
    if (list === undefined) children.set(s.ppid, [pid]);
    else list.push(pid);
  }
  const out: ProcCpu[] = [];
  const walk = (pid: number) => {
    for (const c of children.get(pid) ?? []) {
      if (exclude.includes(c)) continue;
      const i = info.get(c);
      if (i !== undefined) out.push({ pid: c, comm: i.comm, kind: chromiumKind(c, i.comm), cpuSeconds: i.cpuSeconds });
      walk(c);
    }
  };
  walk(root);
  return out;
}

/** CPU seconds of each thread name (summed over the processes and their threads of that name), process kind first: `renderer/Compositor`. */
export function threadsCpu(procs: readonly ProcCpu[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const p of procs) {
    if (p.kind === '') continue;
    let threads: ReturnType<typeof threadCpu>;
    try {
      threads = threadCpu(p.pid);
    } catch {
      continue; // gone meanwhile
    }
    for (const t of threads) {
      const name = `${p.kind}/${t.tid === p.pid ? 'main' : t.comm}`;
      out.set(name, (out.get(name) ?? 0) + t.cpuSeconds);
    }
  }
  return out;
}

/** CPU seconds each Chromium process kind used between two readings (a process new since `before` counts from 0). */
export function chromiumCpuByKind(after: readonly ProcCpu[], before: readonly ProcCpu[]): Record<string, number> {
  const was = new Map(before.map((p) => [p.pid, p.cpuSeconds]));
  const by: Record<string, number> = {};
  for (const p of after) {
    if (p.kind === '') continue;
    by[p.kind] = (by[p.kind] ?? 0) + p.cpuSeconds - (was.get(p.pid) ?? 0);
  }
  return by;
}

/** The machine's busy and total CPU seconds (all cores) so far, from /proc/stat's `cpu` line. */
export function machineCpu(): { busySeconds: number; totalSeconds: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
  // user nice system idle iowait irq softirq steal (guest time is inside user)
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = line
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  const busy = user + nice + system + irq + softirq + steal;
  return { busySeconds: busy / clkTck(), totalSeconds: (busy + idle + iowait) / clkTck() };
}

/** The `n` thread names that used the most CPU between two `threadsCpu` readings, busiest first. */
export function topThreads(after: Map<string, number>, before: Map<string, number>, n: number): Record<string, number> {
  const d = [...after].map(([k, v]) => [k, v - (before.get(k) ?? 0)] as const).filter(([, v]) => v > 0);
  return Object.fromEntries(
    d
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, v]) => [k, Math.round(v * 100) / 100]),
  );
}
