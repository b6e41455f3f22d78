/** cluster start: a local etcd and N brokers (lib/cluster/local-cluster.ts) until SIGINT/SIGTERM. */
import { startLocalCluster } from '../../cluster/local-cluster.js';
import type { Context } from '../context.js';
import { UsageError } from '../errors.js';

type Flags = Record<string, unknown>;

function overridesOf(list: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const kv of (list as string[] | undefined) ?? []) {
    const eq = kv.indexOf('=');
    if (eq <= 0) throw new UsageError(`--override expects key=value, got '${kv}'`);
    out[kv.slice(0, eq)] = kv.slice(eq + 1);
  }
  return out;
}

export async function clusterStart(ctx: Context, f: Flags): Promise<number> {
  const overrides = overridesOf(f['override']);
  const dir = f['dir'] as string | undefined;
  const clusterId = f['clusterId'] as string | undefined;
  const cluster = await startLocalCluster({
    brokers: f['brokers'] as number,
    overrides,
    ...(dir !== undefined ? { dir } : {}),
    ...(clusterId !== undefined ? { clusterId } : {}),
  });
  const info = {
    clusterId: cluster.clusterId,
    bootstrap: cluster.bootstrap(),
    etcd: cluster.etcd.endpoints,
    dir: cluster.dir,
    brokers: cluster.brokers.map((b) => ({ nodeId: b.nodeId, bootstrap: b.bootstrap, admin: b.admin, logFile: b.logFile })),
  };
  if (ctx.format === 'json') process.stdout.write(`${JSON.stringify(info)}\n`);
  else {
    process.stdout.write(`cluster ${info.clusterId}: ${cluster.brokers.length} brokers, etcd ${info.etcd}\n`);
    for (const b of info.brokers) process.stdout.write(`  broker ${b.nodeId}  ${b.bootstrap}  admin ${b.admin ?? '-'}  log ${b.logFile}\n`);
    process.stdout.write(
      `bootstrap.servers=${info.bootstrap}\n(Ctrl-C stops the brokers and etcd${dir === undefined ? ' and removes ' + info.dir : ''})\n`,
    );
  }
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await cluster.stop();
  return 0;
}
