/**
 * `gregor start [--config server.properties] [--override key=value]…`; KAFKA_* environment variables
 * are read too (Apache image mapping). SIGTERM/SIGINT stop the broker cleanly and exit 0.
 */
import { Broker } from './broker.js';
import { ConfigError } from './config.js';
import { isToolCommand, runTool } from './cli/index.js';

const USAGE = `usage: gregor start [--config FILE] [--override key=value]... [--data-dir DIR] [--port N]
  Starts a Kafka-compatible broker (default 127.0.0.1:9092, data in ./data).
  Kafka's server.properties keys are accepted in the file, as --override, and as KAFKA_* variables.`;

export interface CliArgs {
  command: string;
  configFile?: string;
  overrides: Record<string, string>;
}

export function parseArgs(argv: readonly string[]): CliArgs {
  const [command = 'start', ...rest] = argv;
  const args: CliArgs = { command, overrides: {} };
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i] ?? '';
    const next = (): string => {
      const v = rest[++i];
      if (v === undefined) throw new ConfigError(`${a} needs a value`);
      return v;
    };
    if (a === '--config') args.configFile = next();
    else if (a === '--override') {
      const kv = next();
      const eq = kv.indexOf('=');
      if (eq <= 0) throw new ConfigError(`--override expects key=value, got '${kv}'`);
      args.overrides[kv.slice(0, eq)] = kv.slice(eq + 1);
    } else if (a === '--data-dir') args.overrides['log.dir'] = next();
    else if (a === '--port') args.overrides['listeners'] = `PLAINTEXT://127.0.0.1:${next()}`;
    else throw new ConfigError(`unknown argument '${a}'\n${USAGE}`);
  }
  return args;
}

export async function main(argv: readonly string[]): Promise<number> {
  if (isToolCommand(argv[0])) return runTool(argv);
  let args: CliArgs;
  try {
    args = parseArgs(argv);
  } catch (e) {
    console.error(e instanceof Error ? e.message : String(e));
    return 2;
  }
  if (args.command === 'help' || args.command === '--help' || args.command === '-h') {
    console.log(USAGE);
    return 0;
  }
  if (args.command !== 'start') {
    console.error(`unknown command '${args.command}'\n${USAGE}`);
    return 2;
  }
  let broker: Broker;
  try {
    broker = new Broker({ config: args.overrides, env: process.env, ...(args.configFile !== undefined ? { configFile: args.configFile } : {}) });
  } catch (e) {
    console.error(e instanceof Error ? e.message : String(e));
    return 2;
  }
  const faults = process.env['GREGOR_FAULTS'];
  if (faults !== undefined && faults !== '') {
    // fault injection for client tests run against a child broker: a JSON array of rules (lib/network/faults.ts, without `match`)
    try {
      const rules = JSON.parse(faults) as unknown;
      if (!Array.isArray(rules)) throw new Error('GREGOR_ERR_FAULT_RULE: GREGOR_FAULTS must be a JSON array of rules');
      for (const r of rules) broker.faults.add(r as Parameters<typeof broker.faults.add>[0]);
    } catch (e) {
      console.error(`GREGOR_FAULTS: ${e instanceof Error ? e.message : String(e)}`);
      return 2;
    }
    broker.logger.warn({ faults: broker.faults.rules }, 'fault injection rules from GREGOR_FAULTS are active');
  }
  broker.logger.info({ config: broker.config.effective() }, 'effective configuration');
  await broker.start();
  return new Promise<number>((resolveExit) => {
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) return;
      stopping = true;
      broker.logger.info({ signal }, 'shutting down');
      broker.stop().then(
        () => resolveExit(0),
        (err: unknown) => {
          broker.logger.error({ err }, 'shutdown failed');
          resolveExit(1);
        },
      );
    };
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
  });
}
