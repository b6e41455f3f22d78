/**
 * `gregor start [--config server.properties] [--override key=value]… [--topic spec]… [--ready-file path]`;
 * KAFKA_* environment variables are read too (Apache image mapping), GREGOR_TOPICS declares topics.
 * Once ready (listeners bound, declared topics created): the ready file, then one stdout line
 * `GREGOR_READY {"bootstrap":…,"admin":…}`, and a banner on stderr when it is a terminal
 * (lib/ready-signal.ts). SIGTERM/SIGINT remove the ready file, stop the broker cleanly and exit 0.
 * Exit 2: bad arguments, configuration or topic specs.
 */
import { Broker } from './broker.js';
import { ConfigError } from './config.js';
import { headroomFromEnv, startHeapHeadroom } from './heap-headroom.js';
import { idleMsFromEnv, startIdleMemory } from './idle-memory.js';
import { isToolCommand, runTool } from './cli/index.js';
import { announceReady, banner, prepareReadyFile, removeReadyFile } from './ready-signal.js';
import { startWarmUp, type WarmUp } from './warm-up.js';
import { mergeTopicSpecs, parseTopicSpec, parseTopicSpecList, TOPIC_SPEC_SYNTAX, type TopicSpec } from './topic-spec.js';

const USAGE = `usage: gregor start [--config FILE] [--override key=value]... [--data-dir DIR] [--port N]
                    [--topic ${TOPIC_SPEC_SYNTAX}]... [--ready-file PATH]
  Starts a Kafka-compatible broker (default 127.0.0.1:9092, data in ./data).
  Kafka's server.properties keys are accepted in the file, as --override, and as KAFKA_* variables.
  --topic (repeatable) and GREGOR_TOPICS (specs separated by spaces or ';') declare topics that exist
  before the broker is ready, e.g. --topic orders:3:retention.ms=60000,cleanup.policy=compact,delete
  When ready it prints GREGOR_READY {"bootstrap":"host:port","admin":"host:port"} on stdout and writes
  the same JSON to --ready-file (removed again on a clean stop).

Tools (each speaks the Kafka protocol to gregor or any Kafka; \`gregor <command> --help\` for details):
  topic create|list|describe|delete|alter-config|add-partitions, produce, consume,
  group list|describe|seek|delete, partitions reassign|reassignments|elect-leaders, offsets,
  log-dirs, scram add|list|delete, cluster info|health|start, debug dump-log, dev certs`;

export interface CliArgs {
  command: string;
  configFile?: string;
  overrides: Record<string, string>;
  /** --topic, parsed (GREGOR_TOPICS is read in main) */
  topics: TopicSpec[];
  readyFile?: string;
}

export function parseArgs(argv: readonly string[]): CliArgs {
  const [command = 'start', ...rest] = argv;
  const args: CliArgs = { command, overrides: {}, topics: [] };
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
    else if (a === '--topic') args.topics.push(parseTopicSpec(next()));
    else if (a === '--ready-file') args.readyFile = next();
    else if (a === '--help' || a === '-h') args.command = 'help';
    else throw new ConfigError(`unknown argument '${a}'\n${USAGE}`);
  }
  return args;
}

/** What the process that runs `main` may add to a start. */
export interface StartHooks {
  /**
   * Called once the broker is ready, just before the ready line, under V8's default flags (the
   * heap-headroom tuning set aside: lib/heap-headroom.ts). bin/load-broker.js writes the start path's
   * code cache here, when the functions start-up compiled are in it, and before a harness that reads
   * the ready line can stop the process.
   */
  beforeReadyLine?: () => void;
}

export async function main(argv: readonly string[], hooks: StartHooks = {}): Promise<number> {
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
  let topics: TopicSpec[];
  try {
    topics = mergeTopicSpecs(parseTopicSpecList(process.env['GREGOR_TOPICS'] ?? ''), args.topics);
    if (args.readyFile !== undefined) prepareReadyFile(args.readyFile);
    broker = new Broker({
      config: args.overrides,
      env: process.env,
      topics,
      ...(args.configFile !== undefined ? { configFile: args.configFile } : {}),
    });
  } catch (e) {
    console.error(e instanceof Error ? e.message : String(e));
    return 2;
  }
  const faults = process.env['GREGOR_FAULTS'];
  if (faults !== undefined && faults !== '') {
    // fault injection for client tests run against a child broker: the JSON POST /v1/faults takes (a rule or an array, lib/network/fault-rules.ts)
    try {
      broker.faults.addJson(faults);
    } catch (e) {
      console.error(`GREGOR_FAULTS: ${e instanceof Error ? e.message : String(e)}`);
      return 2;
    }
    broker.logger.warn({ faults: broker.faults.list() }, 'fault injection rules from GREGOR_FAULTS are active');
  }
  broker.logger.info({ config: broker.config.effective() }, 'effective configuration');
  // the broker owns this process: keep V8's full collections from chasing short-lived record buffers
  const headroom = startHeapHeadroom({ headroomBytes: headroomFromEnv(process.env['GREGOR_HEAP_HEADROOM_MB']) });
  // and give the heap a burst grew (start-up, the recovery pass, traffic) back once the process is idle
  const moved = broker.metrics.topics.all;
  startIdleMemory({ idleMs: idleMsFromEnv(process.env['GREGOR_IDLE_GC_MS']), activity: () => moved.messagesIn + moved.messagesOut });
  try {
    await broker.start();
  } catch (e) {
    // start() has logged the failure; a GREGOR_ERR_* error's message is for people, its stack is not
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && code.startsWith('GREGOR_ERR_') && e instanceof Error) {
      console.error(e.message.includes(code) ? e.message : `${code}: ${e.message}`);
      return 1;
    }
    throw e;
  }
  let stopping = false;
  // read through a call: TypeScript would narrow the local to false across the awaits below
  const signalled = (): boolean => stopping;
  let warm: WarmUp | null = null;
  const exit = new Promise<number>((resolveExit) => {
    const stop = (signal: string) => {
      if (stopping) return;
      stopping = true;
      warm?.stop();
      broker.logger.info({ signal }, 'shutting down');
      const readyFileRemoved = args.readyFile !== undefined ? removeReadyFile(args.readyFile) : Promise.resolve();
      readyFileRemoved
        .catch((err: unknown) => broker.logger.warn({ err, readyFile: args.readyFile }, 'could not remove the ready file'))
        .then(() => broker.stop())
        .then(
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
  await Promise.race([broker.ready, exit]);
  if (signalled()) return exit;
  const info = { bootstrap: broker.bootstrapServers, admin: broker.adminAddress };
  const { beforeReadyLine } = hooks;
  if (beforeReadyLine !== undefined) headroom.withV8Defaults(beforeReadyLine);
  try {
    await announceReady(info, { logger: broker.logger, readyFile: args.readyFile });
  } catch (e) {
    broker.logger.error({ err: e, readyFile: args.readyFile }, 'cannot write the ready file');
    await broker.stop();
    return 1;
  }
  if (signalled() && args.readyFile !== undefined) await removeReadyFile(args.readyFile).catch(() => undefined); // a signal came while it was written
  // what clients' first requests would load on the spot, loaded now, one step per turn (lib/warm-up.ts)
  if (!signalled() && process.env['GREGOR_WARM_UP'] !== '0') warm = startWarmUp();
  if (process.stderr.isTTY) {
    const defaultPartitions = broker.config.int('num.partitions');
    const declared = topics.map((t) => ({ name: t.name, partitions: t.partitions === -1 ? defaultPartitions : t.partitions }));
    process.stderr.write(banner(info, { dataDir: broker.dataDir, topics: declared, readyMs: performance.now() }));
  }
  return exit;
}
