/**
 * Network namespaces on this machine (root only), for tests and benchmarks that need a network they
 * can cut: shell calls, a check that `ip netns` works here, and a bridged network — one namespace per
 * member, each with a veth whose other end is on a bridge in the root namespace, which holds an
 * address of the same subnet. Processes in the root namespace (etcd, the test's clients) reach every
 * member, and members reach each other and the root namespace, until `cut` drops their packets with
 * iptables rules inside a member's namespace (the root namespace's own rules are never touched).
 *
 * Names carry this process's id (namespaces `<prefix>-<pid>-<i>`, bridge `<tag><pid>`), so parallel
 * runs do not meet; `teardown` undoes everything, and a later setup removes what a run that died
 * (its pid gone) left behind.
 */
import { execFileSync } from 'node:child_process';

export function sh(cmd: string, args: readonly string[]): string {
  return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Why namespaces cannot be used here (not root, no `ip netns`, no iptables), or null when they can. */
export function netnsUnavailable(): string | null {
  if (process.getuid?.() !== 0) return 'network namespaces need root';
  const probe = `gregor-probe-${process.pid}`;
  try {
    sh('ip', ['netns', 'add', probe]);
  } catch (e) {
    return `ip netns add failed: ${(e as Error).message.split('\n')[0] ?? ''}`;
  }
  try {
    sh('ip', ['netns', 'exec', probe, 'iptables', '-w', '-S']);
    return null;
  } catch (e) {
    return `iptables inside a namespace failed: ${(e as Error).message.split('\n')[0] ?? ''}`;
  } finally {
    deleteNamespace(probe);
  }
}

/** Ends the processes still inside `ns` (by pid: TERM, then KILL after 3 s) and deletes it (its veths and rules go with it). */
export function deleteNamespace(ns: string): void {
  const pids = () => {
    try {
      return sh('ip', ['netns', 'pids', ns])
        .split('\n')
        .filter((p) => /^\d+$/.test(p));
    } catch {
      return [];
    }
  };
  for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
    const left = pids();
    if (left.length === 0) break;
    for (const pid of left) {
      try {
        process.kill(Number(pid), signal);
      } catch {
        // gone already
      }
    }
    const deadline = Date.now() + 3000;
    while (pids().length > 0 && Date.now() < deadline) execFileSync('sleep', ['0.1']);
  }
  try {
    sh('ip', ['netns', 'delete', ns]);
  } catch {
    // not there
  }
}

export interface NetnsMember {
  /** The namespace's name (`ip netns exec <name> …`). */
  readonly name: string;
  /** Its address on the bridge. */
  readonly address: string;
}

/** One side of a cut: an address, or one TCP port of it (the packets of connections to or from that port). */
export interface Peer {
  address: string;
  port?: number;
}

export interface BridgedNetwork {
  /** The root namespace's address on the bridge (where etcd or a client is reached from the members). */
  readonly hostAddress: string;
  readonly members: readonly NetnsMember[];
  /** Drops, in `member`'s namespace, every packet to and from each of `peers` (both directions). */
  cut(member: NetnsMember, peers: readonly Peer[]): void;
  /** Removes every rule `cut` added in `member`'s namespace. */
  heal(member: NetnsMember): void;
  /** Ends the processes left in the namespaces, deletes them and the bridge (idempotent). */
  teardown(): void;
}

export interface BridgedNetworkOptions {
  /** Namespaces' name prefix (default gregor-net). */
  prefix?: string;
  /** Bridge and veth name prefix, at most 4 characters (default gnet). */
  tag?: string;
  members: number;
}

/** A /24 in 10.0.0.0/8 that no interface of the root namespace uses, chosen from the pid. */
function freeSubnet(): string {
  const used = sh('ip', ['-4', '-o', 'addr', 'show']);
  for (let i = 0; i < 256; i++) {
    const n = (process.pid + i) % 200;
    const subnet = `10.${50 + n}.${(process.pid >> 8) % 250}`;
    if (!used.includes(` ${subnet}.`)) return subnet;
  }
  throw new Error('no free 10.x.y.0/24 subnet');
}

/** Removes namespaces and bridges of `prefix`/`tag` whose creating process is gone. */
function removeStale(prefix: string, tag: string): void {
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  for (const line of sh('ip', ['netns', 'list']).split('\n')) {
    const m = new RegExp(`^(${prefix}-(\\d+)-\\d+)(\\s|$)`).exec(line);
    if (m?.[1] !== undefined && !alive(Number(m[2]))) deleteNamespace(m[1]);
  }
  for (const line of sh('ip', ['-o', 'link', 'show', 'type', 'bridge']).split('\n')) {
    const m = new RegExp(`^\\d+: (${tag}(\\d+)):`).exec(line);
    if (m?.[1] !== undefined && !alive(Number(m[2]))) sh('ip', ['link', 'delete', m[1]]);
  }
}

/** Creates the bridge and one namespace per member (addresses .1 … .n of a free /24; the root namespace is .254). */
export function createBridgedNetwork(opts: BridgedNetworkOptions): BridgedNetwork {
  const prefix = opts.prefix ?? 'gregor-net';
  const tag = opts.tag ?? 'gnet';
  if (tag.length > 4) throw new Error(`tag '${tag}' is longer than 4 characters (interface names stop at 15)`);
  removeStale(prefix, tag);
  const bridge = `${tag}${process.pid}`;
  const subnet = freeSubnet();
  const hostAddress = `${subnet}.254`;
  const members: NetnsMember[] = [];
  let bridgeMade = false;
  const teardown = () => {
    for (const m of members) deleteNamespace(m.name);
    if (bridgeMade) {
      try {
        sh('ip', ['link', 'delete', bridge]);
      } catch {
        // gone already
      }
      bridgeMade = false;
    }
  };
  try {
    sh('ip', ['link', 'add', bridge, 'type', 'bridge']);
    bridgeMade = true;
    sh('ip', ['addr', 'add', `${hostAddress}/24`, 'dev', bridge]);
    sh('ip', ['link', 'set', bridge, 'up']);
    for (let i = 1; i <= opts.members; i++) {
      const m = { name: `${prefix}-${process.pid}-${i}`, address: `${subnet}.${i}` };
      sh('ip', ['netns', 'add', m.name]);
      members.push(m);
      const veth = `${bridge}v${i}`;
      sh('ip', ['link', 'add', veth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', m.name]);
      sh('ip', ['link', 'set', veth, 'master', bridge, 'up']);
      sh('ip', ['-n', m.name, 'addr', 'add', `${m.address}/24`, 'dev', 'eth0']);
      sh('ip', ['-n', m.name, 'link', 'set', 'eth0', 'up']);
      sh('ip', ['-n', m.name, 'link', 'set', 'lo', 'up']);
    }
  } catch (e) {
    teardown();
    throw e;
  }
  const iptables = (m: NetnsMember, args: string[]) => sh('ip', ['netns', 'exec', m.name, 'iptables', '-w', ...args]);
  return {
    hostAddress,
    members,
    cut(member, peers) {
      for (const p of peers) {
        const out = ['-d', p.address, ...(p.port === undefined ? [] : ['-p', 'tcp', '--dport', String(p.port)])];
        const back = ['-s', p.address, ...(p.port === undefined ? [] : ['-p', 'tcp', '--sport', String(p.port)])];
        iptables(member, ['-A', 'OUTPUT', ...out, '-j', 'DROP']);
        iptables(member, ['-A', 'INPUT', ...back, '-j', 'DROP']);
      }
    },
    heal(member) {
      iptables(member, ['-F', 'OUTPUT']);
      iptables(member, ['-F', 'INPUT']);
    },
    teardown,
  };
}
