/**
 * librdkafka 2.15's share consumer (KIP-932) as a child process: test/helpers/native/rdkafka-share.c,
 * built like the other librdkafka programs. Each record it gets arrives as a line the helper collects;
 * how the program acknowledges a record depends on the record's value (see the C file).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { buildRdkafkaProgram, librdkafkaMissing } from '../../compat/bench/native-build.js';
import type { ShareService } from '../../lib/share/index.js';
import { until } from './eos.js';
import { PROJECT_ROOT } from './project.js';

export { librdkafkaMissing };

export interface ShareDelivery {
  partition: number;
  offset: number;
  deliveryCount: number;
  /** A accept, R release, X reject, H held (never acknowledged) */
  ack: 'A' | 'R' | 'X' | 'H';
}

export function shareConsumerBinary(): string {
  return buildRdkafkaProgram(
    join(PROJECT_ROOT, 'test/helpers/native/rdkafka-share.c'),
    join(PROJECT_ROOT, 'dist/test/helpers/native/rdkafka-share'),
  );
}

export class ShareConsumer {
  readonly deliveries: ShareDelivery[] = [];
  /** "E" lines: poll, record and acknowledgement errors */
  readonly errors: string[] = [];
  /** librdkafka's own log lines (stderr) */
  readonly log: string[] = [];
  private out = '';
  private readonly child: ChildProcess;
  readonly exited: Promise<number | null>;

  constructor(bootstrap: string, group: string, topic: string, config: Record<string, string> = {}) {
    const args = [bootstrap, group, topic, ...Object.entries(config).map(([k, v]) => `${k}=${v}`)];
    this.child = spawn(shareConsumerBinary(), args, { stdio: ['pipe', 'pipe', 'pipe'] });
    this.exited = new Promise((resolve) => this.child.on('exit', (code) => resolve(code)));
    this.child.stdout?.on('data', (d: Buffer) => {
      this.out += d.toString();
      let nl: number;
      while ((nl = this.out.indexOf('\n')) >= 0) {
        const line = this.out.slice(0, nl);
        this.out = this.out.slice(nl + 1);
        const m = /^R (\d+) (\d+) (\d+) ([ARXH])$/.exec(line);
        if (m !== null) {
          this.deliveries.push({
            partition: Number(m[1]),
            offset: Number(m[2]),
            deliveryCount: Number(m[3]),
            ack: m[4] as ShareDelivery['ack'],
          });
        } else if (line.startsWith('E ')) this.errors.push(line);
      }
    });
    this.child.stderr?.on('data', (d: Buffer) => this.log.push(d.toString()));
  }

  /** Closes stdin: the consumer sends its pending acknowledgements, leaves the group and exits. */
  async close(): Promise<void> {
    this.child.stdin?.end();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 15_000);
    await this.exited;
    clearTimeout(timer);
  }

  /** kill -9: no acknowledgement, no leave. */
  async kill(): Promise<void> {
    this.child.kill('SIGKILL');
    await this.exited;
  }
}

/**
 * For a timed-out wait: what each member received per partition (after its first `skip` deliveries)
 * and its last errors, so that a stall says which partition stopped and who held it.
 */
export function describeShareMembers(
  members: readonly Pick<ShareConsumer, 'deliveries' | 'errors'>[],
  skip: readonly number[] = [],
): string {
  return members
    .map((m, i) => {
      const perPartition = new Map<number, number>();
      for (const d of m.deliveries.slice(skip[i] ?? 0)) perPartition.set(d.partition, (perPartition.get(d.partition) ?? 0) + 1);
      const counts = [...perPartition].map(([p, n]) => `p${p}=${n}`).join(' ');
      return `member ${i}: ${counts || 'nothing'}; errors: ${m.errors.slice(-5).join(' | ') || 'none'}`;
    })
    .join('\n');
}

/** Waits until the share group has `n` members, each assigned one topic's partitions (an in-process broker's share service). */
export async function shareMembersJoined(share: () => ShareService, group: string, n: number): Promise<void> {
  await until(
    () => {
      const g = share().coordinator.groups.get(group);
      return g !== undefined && g.members.size === n && [...g.members.values()].every((m) => m.assignment.size === 1);
    },
    30_000,
    `${n} members in share group ${group}`,
  );
}
