/**
 * The command line of the tool commands (commander). Only option definitions live here; each
 * action imports its implementation when it runs, so `--help` and usage errors stay fast.
 */
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import type { Context, ConnectionFlags } from './context.js';
import { ENCODINGS } from './encoding.js';
import { ExitCode, formatError, UsageError } from './errors.js';
import type { OutputFormat } from './output.js';
import {
  collect,
  COMPRESSION_NAMES,
  parseAcks,
  parseBrokerList,
  parseDuration,
  parseNonNegativeInt,
  parsePartitionList,
  parsePositiveInt,
} from './parse.js';

const DEFAULT_BOOTSTRAP = 'localhost:9092';

const EPILOG = `
Exit codes:
  0  success
  1  error: the message names the broker and the Kafka error (NAME (code)), or says
     what else failed (connection, input data, unhealthy cluster)
  2  usage: unknown command or option, bad or missing value

Environment:
  KAFKA_BOOTSTRAP_SERVERS  default for -b/--bootstrap (else ${DEFAULT_BOOTSTRAP})`;

/** Converts a UsageError of a value parser into commander's invalid-argument error (exit 2). */
function arg<T>(fn: (text: string) => T): (text: string) => T {
  return (text) => {
    try {
      return fn(text);
    } catch (e) {
      if (e instanceof UsageError) throw new InvalidArgumentError(e.message);
      throw e;
    }
  };
}

type Flags = Record<string, unknown>;

function withConnection(cmd: Command): Command {
  return cmd
    .option(
      '-b, --bootstrap <servers>',
      'bootstrap brokers host:port[,host:port...]',
      process.env['KAFKA_BOOTSTRAP_SERVERS'] ?? DEFAULT_BOOTSTRAP,
    )
    .option('--client-id <id>', 'client id sent to the brokers', 'gregor-cli')
    .addOption(
      new Option('--request-timeout <duration>', 'how long to wait for each broker response')
        .default(30000, '30s')
        .argParser(arg((t) => parseDuration(t, '--request-timeout'))),
    );
}

function withFormat(cmd: Command, def: OutputFormat = 'text'): Command {
  return cmd.addOption(new Option('--format <format>', 'output format').choices(['text', 'json']).default(def));
}

function connectionOf(flags: Flags): ConnectionFlags {
  return { bootstrap: String(flags['bootstrap']), clientId: String(flags['clientId']), requestTimeout: Number(flags['requestTimeout']) };
}

/** State shared by the actions of one run. */
interface Run {
  exitCode: number;
}

/** Wraps an action: builds the context, runs, maps errors to a stderr line and an exit code. */
function action(run: Run, needsConnection: boolean, fn: (ctx: Context, args: unknown[], flags: Flags) => Promise<number | undefined>) {
  return async (...all: unknown[]): Promise<void> => {
    const cmd = all[all.length - 1] as Command;
    const flags = cmd.opts();
    const args = all.slice(0, -2);
    const { Context: Ctx } = await import('./context.js');
    const ctx = new Ctx((flags['format'] as OutputFormat | undefined) ?? 'text', needsConnection ? connectionOf(flags) : null);
    try {
      const code = await fn(ctx, args, flags);
      run.exitCode = typeof code === 'number' ? code : ExitCode.OK;
    } catch (e) {
      const { text, exitCode } = formatError(e);
      process.stderr.write(`${text}\n`);
      if (process.env['GREGOR_CLI_DEBUG'] !== undefined && e instanceof Error) process.stderr.write(`${e.stack ?? ''}\n`);
      run.exitCode = exitCode;
    } finally {
      ctx.close();
    }
  };
}

function topicCommands(program: Command, run: Run): void {
  const topic = program.command('topic').description('create, list, describe, delete and change topics');
  withFormat(withConnection(topic.command('create').description('create topics').argument('<topics...>', 'topic names')))
    .addOption(
      new Option('-p, --partitions <n>', "partitions (default: the broker's num.partitions)").argParser(
        arg((t) => parsePositiveInt(t, '--partitions')),
      ),
    )
    .addOption(
      new Option('-r, --replication-factor <n>', "replicas of each partition (default: the broker's default.replication.factor)").argParser(
        arg((t) => parsePositiveInt(t, '--replication-factor')),
      ),
    )
    .option('-c, --config <key=value>', 'topic config (repeatable)', collect)
    .option('--if-not-exists', 'an existing topic is not an error')
    .option('--dry-run', 'validate only (CreateTopics validate_only)')
    .action(action(run, true, async (ctx, [names], f) => (await import('./commands/topic.js')).topicCreate(ctx, names as string[], f)));
  withFormat(withConnection(topic.command('list').alias('ls').description('list topics')))
    .option('-i, --internal', 'include internal topics (__consumer_offsets, ...)')
    .action(action(run, true, async (ctx, _a, f) => (await import('./commands/topic.js')).topicList(ctx, f)));
  withFormat(
    withConnection(
      topic
        .command('describe')
        .description('partitions (leader, replicas, ISR, offsets) and configs of topics')
        .argument('<topics...>', 'topic names'),
    ),
  )
    .option('-a, --all-configs', 'show every config, not only those that differ from the defaults')
    .action(action(run, true, async (ctx, [names], f) => (await import('./commands/topic.js')).topicDescribe(ctx, names as string[], f)));
  withFormat(withConnection(topic.command('delete').alias('rm').description('delete topics').argument('<topics...>', 'topic names')))
    .option('--if-exists', 'a missing topic is not an error')
    .action(action(run, true, async (ctx, [names], f) => (await import('./commands/topic.js')).topicDelete(ctx, names as string[], f)));
  withFormat(
    withConnection(
      topic
        .command('alter-config')
        .description('set, delete, append to or subtract from topic configs')
        .argument('<topics...>', 'topic names'),
    ),
  )
    .option('-s, --set <key=value>', 'set a config (repeatable)', collect)
    .option('-d, --delete <key>', 'remove a config override (repeatable)', collect)
    .option('--append <key=value>', 'append to a list config (repeatable)', collect)
    .option('--subtract <key=value>', 'remove from a list config (repeatable)', collect)
    .option('--dry-run', 'validate only')
    .action(
      action(run, true, async (ctx, [names], f) => (await import('./commands/topic.js')).topicAlterConfig(ctx, names as string[], f)),
    );
  withFormat(withConnection(topic.command('add-partitions').description('add partitions to topics').argument('<topics...>', 'topic names')))
    .addOption(new Option('-n, --num <n>', 'partitions to add').argParser(arg((t) => parsePositiveInt(t, '--num'))).conflicts('total'))
    .addOption(new Option('--total <n>', 'grow to this many partitions').argParser(arg((t) => parsePositiveInt(t, '--total'))))
    .option('--dry-run', 'validate only')
    .action(
      action(run, true, async (ctx, [names], f) => (await import('./commands/topic.js')).topicAddPartitions(ctx, names as string[], f)),
    );
}

function produceCommand(program: Command, run: Run): void {
  withFormat(
    withConnection(program.command('produce').description('produce records read from stdin, one per line').argument('<topic>', 'topic')),
  )
    .option('-k, --key <key>', 'key of every record')
    .option('-K, --key-separator <sep>', 'each line is key<sep>value (split at the first <sep>)')
    .option('-H, --header <key=value>', 'header on every record (repeatable)', collect)
    .addOption(
      new Option('-p, --partition <n>', 'partition of every record (default: by key, round-robin without)').argParser(
        arg((t) => parseNonNegativeInt(t, '--partition')),
      ),
    )
    .addOption(new Option('-z, --compression <codec>', 'batch compression').choices(COMPRESSION_NAMES).default('none'))
    .addOption(new Option('--acks <acks>', 'all (-1), 1 or 0').default(-1, 'all').argParser(arg(parseAcks)))
    .addOption(
      new Option('--input <kind>', 'text: lines (with -K); json: one object per line, as `consume --format json` prints them')
        .choices(['text', 'json'])
        .default('text'),
    )
    .addOption(
      new Option(
        '-E, --encoding <enc>',
        'how keys, values and header values are written in the input (escape, base64, hex are binary-safe)',
      )
        .choices(ENCODINGS)
        .default('utf8'),
    )
    .option('-Z, --tombstone', 'an empty value is produced as null (a tombstone)')
    .addOption(
      new Option('--batch-bytes <n>', 'send once this many bytes wait')
        .default(1 << 20)
        .argParser(arg((t) => parsePositiveInt(t, '--batch-bytes'))),
    )
    .action(action(run, true, async (ctx, [topic], f) => (await import('./commands/produce.js')).produce(ctx, topic as string, f)));
}

function consumeCommand(program: Command, run: Run): void {
  withFormat(
    withConnection(
      program.command('consume').description('print records of topics (JSON lines by default)').argument('<topics...>', 'topics'),
    ),
    'json',
  )
    .option('-o, --offset <spec>', 'where to start: start, end, <offset>, -<N> (last N), @<timestamp ms or ISO 8601>', 'start')
    .option('-e, --exit-at-end', 'exit once every partition is read to its end')
    .addOption(new Option('-c, --count <n>', 'exit after this many records').argParser(arg((t) => parsePositiveInt(t, '--count'))))
    .option('-g, --group <group>', 'consume as a member of this group (committed offsets first; commits as it reads)')
    .addOption(
      new Option('-p, --partitions <list>', 'only these partitions, e.g. 0,2-3 (not with --group)')
        .argParser(arg(parsePartitionList))
        .conflicts('group'),
    )
    .option('-f, --format-string <fmt>', 'kcat-style format: %t %p %o %k %v %h %T %K %V %%, \\n \\t (implies --format text; default %v\\n)')
    .addOption(new Option('-E, --encoding <enc>', 'how keys, values and header values are printed').choices(ENCODINGS).default('utf8'))
    .option('--read-committed', 'skip records of aborted transactions and stop at the last stable offset')
    .action(
      action(run, true, async (ctx, [topics], f) => (await import('./commands/consume.js')).consumeCommand(ctx, topics as string[], f)),
    );
}

function groupCommands(program: Command, run: Run): void {
  const group = program.command('group').description('list, describe, seek and delete consumer groups');
  withFormat(withConnection(group.command('list').alias('ls').description('list groups (of every broker)')))
    .option('-s, --state <state>', 'only groups in this state, e.g. Empty, Stable (repeatable)', collect)
    .option('-t, --type <type>', 'only groups of this type: classic, consumer (repeatable)', collect)
    .action(action(run, true, async (ctx, _a, f) => (await import('./commands/group.js')).groupList(ctx, f)));
  withFormat(
    withConnection(
      group.command('describe').description('members, committed offsets, log end offsets and lag').argument('<groups...>', 'group ids'),
    ),
  ).action(action(run, true, async (ctx, [groups], f) => (await import('./commands/group.js')).groupDescribe(ctx, groups as string[], f)));
  withFormat(
    withConnection(
      group
        .command('seek')
        .description("move a group's committed offsets (a dry run unless --execute; the group must have no members)")
        .argument('<group>', 'group id'),
    ),
  )
    .requiredOption('--to <target>', 'start, end, <offset>, or @<timestamp ms or ISO 8601>')
    .option('-t, --topic <topic[:partitions]>', 'topics (and partitions) to move (repeatable; default: those the group committed)', collect)
    .option('--execute', 'commit the new offsets (without it: print the plan only)')
    .action(action(run, true, async (ctx, [g], f) => (await import('./commands/group-seek.js')).groupSeek(ctx, g as string, f)));
  withFormat(
    withConnection(
      group.command('delete').alias('rm').description('delete groups (they must have no members)').argument('<groups...>', 'group ids'),
    ),
  ).action(action(run, true, async (ctx, [groups], f) => (await import('./commands/group.js')).groupDelete(ctx, groups as string[], f)));
}

function partitionCommands(program: Command, run: Run): void {
  const partitions = program.command('partitions').description('move replicas between brokers and elect leaders (clusters)');
  const impl = () => import('./commands/partitions.js');
  const partitionOption = (what: string) => new Option('-p, --partition <list>', what).argParser(arg(parsePartitionList));
  withFormat(withConnection(partitions.command('reassign').description('move partitions to new replicas (AlterPartitionReassignments)')))
    .requiredOption('-t, --topic <topic>', 'topic')
    .addOption(partitionOption('partitions to move (examples: 0, 0,2, 1-3)').makeOptionMandatory())
    .addOption(
      new Option('-r, --replicas <ids>', 'the new replicas, preferred leader first (example: 2,3)').argParser(arg(parseBrokerList)),
    )
    .option('--cancel', 'cancel the reassignments in progress (back to the original replicas)')
    .option('-w, --wait', 'wait until the reassignments complete')
    .addOption(
      new Option('--timeout <duration>', 'how long --wait waits')
        .default(60000, '60s')
        .argParser(arg((t) => parseDuration(t, '--timeout'))),
    )
    .action(action(run, true, async (ctx, _a, f) => (await impl()).partitionsReassign(ctx, f)));
  withFormat(withConnection(partitions.command('reassignments').description('reassignments in progress (ListPartitionReassignments)')))
    .option('-t, --topic <topic>', 'only this topic')
    .addOption(partitionOption('only these partitions of --topic'))
    .action(action(run, true, async (ctx, _a, f) => (await impl()).partitionsReassignments(ctx, f)));
  withFormat(withConnection(partitions.command('elect-leaders').description('preferred or unclean leader election (ElectLeaders)')))
    .addOption(new Option('--type <type>', 'election type').choices(['preferred', 'unclean']).default('preferred'))
    .option('-t, --topic <topic>', 'only this topic (default: every partition)')
    .addOption(partitionOption('only these partitions of --topic'))
    .action(action(run, true, async (ctx, _a, f) => (await impl()).partitionsElectLeaders(ctx, f)));
}

function otherCommands(program: Command, run: Run): void {
  withFormat(
    withConnection(
      program.command('offsets').description('earliest, latest or by-time offsets of partitions').argument('<topics...>', 'topics'),
    ),
  )
    .option('-t, --time <time>', 'earliest, latest, max-timestamp, or a timestamp (ms or ISO 8601)', 'latest')
    .addOption(new Option('-p, --partitions <list>', 'only these partitions').argParser(arg(parsePartitionList)))
    .option('--read-committed', 'latest means the last stable offset')
    .action(action(run, true, async (ctx, [topics], f) => (await import('./commands/offsets.js')).offsets(ctx, topics as string[], f)));

  withFormat(
    withConnection(
      program.command('log-dirs').description("each broker's log dirs, and the size of each replica in them (DescribeLogDirs)"),
    ),
  )
    .option('-t, --topic <topic...>', 'only these topics (default: every replica)')
    .addOption(new Option('--broker <ids>', 'only these brokers (example: 1,3)').argParser(arg(parseBrokerList)))
    .action(action(run, true, async (ctx, _a, f) => (await import('./commands/log-dirs.js')).logDirs(ctx, f)));

  const cluster = program.command('cluster').description('cluster information and health');
  withFormat(withConnection(cluster.command('info').description('cluster id, controller and brokers')))
    .option('--api-versions', "also list the APIs and versions each broker offers, and the version we'd use")
    .action(action(run, true, async (ctx, _a, f) => (await import('./commands/cluster.js')).clusterInfo(ctx, f)));
  withFormat(
    withConnection(
      cluster.command('health').description('whether every broker answers and every partition has a leader (exit 0 healthy, 1 not)'),
    ),
  )
    .option('-w, --exit-when-healthy', 'wait until the cluster is healthy (exit 1 if --timeout passes first)')
    .addOption(
      new Option('--timeout <duration>', 'how long --exit-when-healthy waits')
        .default(30000, '30s')
        .argParser(arg((t) => parseDuration(t, '--timeout'))),
    )
    .action(action(run, true, async (ctx, _a, f) => (await import('./commands/cluster.js')).clusterHealth(ctx, f)));
  withFormat(
    cluster.command('start').description('run a local cluster: an etcd (Debian etcd-server) and N brokers on free ports, until Ctrl-C'),
  )
    .addOption(new Option('-n, --brokers <n>', 'number of brokers').default(3).argParser(arg((t) => parsePositiveInt(t, '--brokers'))))
    .option('-d, --dir <dir>', 'directory for etcd, data dirs and logs (kept; default: a temporary one, removed on exit)')
    .option('--cluster-id <id>', 'cluster.id (default: a new one)')
    .option('--override <key=value>', 'broker config for every broker (repeatable)', collect, [])
    .action(action(run, false, async (ctx, _a, f) => (await import('./commands/cluster-start.js')).clusterStart(ctx, f)));

  const debug = program.command('debug').description('offline tools');
  withFormat(
    debug
      .command('dump-log')
      .description('decode log segment files (.log, .index, .timeindex, .txnindex) like kafka-dump-log')
      .argument('<files...>', 'segment files'),
  )
    .option('-d, --print-data', 'print every record (offset, timestamp, key, value, headers), not only batches')
    .addOption(new Option('-E, --encoding <enc>', 'how keys and values are printed').choices(ENCODINGS).default('utf8'))
    .action(action(run, false, async (ctx, [files], f) => (await import('./commands/dump-log.js')).dumpLog(ctx, files as string[], f)));

  const scram = program
    .command('scram')
    .description('SCRAM credentials of SASL users (AlterUserScramCredentials, DescribeUserScramCredentials)');
  const scramImpl = () => import('./commands/scram.js');
  const mechanismOption = (what: string) =>
    new Option('-m, --mechanism <mechanism>', `SCRAM-SHA-256 or SCRAM-SHA-512 (repeatable; default: ${what})`).argParser(collect);
  withFormat(withConnection(scram.command('add').description("add or replace a user's credentials").argument('<user>', 'user name')))
    .addOption(mechanismOption('both'))
    .option('--password <password>', 'the password (default: the first line of stdin)')
    .addOption(
      new Option('-i, --iterations <n>', 'PBKDF2 iterations (4096 to 16384)')
        .default(4096)
        .argParser(arg((t) => parsePositiveInt(t, '--iterations'))),
    )
    .action(action(run, true, async (ctx, [user], f) => (await scramImpl()).scramAdd(ctx, user as string, f)));
  withFormat(withConnection(scram.command('delete').alias('rm').description("delete a user's credentials").argument('<user>', 'user name')))
    .addOption(mechanismOption('every one the user has'))
    .action(action(run, true, async (ctx, [user], f) => (await scramImpl()).scramDelete(ctx, user as string, f)));
  withFormat(
    withConnection(
      scram
        .command('list')
        .alias('ls')
        .description('users with credentials: mechanisms and iterations')
        .argument('[users...]', 'user names (default: every user)'),
    ),
  ).action(action(run, true, async (ctx, [users]) => (await scramImpl()).scramList(ctx, (users as string[] | undefined) ?? [])));

  const dev = program.command('dev').description('development helpers');
  withFormat(
    dev
      .command('certs')
      .description('make a CA, a broker certificate and client certificates with openssl (PEM and PKCS12), and print the config lines'),
  )
    .requiredOption('--out <dir>', 'directory the files are written to')
    .option('--host <name>', 'host name in the broker certificate (localhost and 127.0.0.1 are always in it)', 'localhost')
    .option('--client <name>', 'a client certificate with CN=<name> (repeatable)', collect, [])
    .option('--password <password>', 'password of the PKCS12 files', 'gregor-dev')
    .option(
      '--days <n>',
      'validity in days',
      arg((t) => parsePositiveInt(t, '--days')),
      365,
    )
    .action(action(run, false, async (ctx, _a, f) => (await import('./commands/dev-certs.js')).devCerts(ctx, f)));
}

export function buildProgram(run: Run): Command {
  const program = new Command('gregor');
  program
    .description('Kafka tools that speak the protocol directly (no JVM): they work against gregor and any Kafka')
    .usage('<command> [options]')
    .exitOverride()
    .showHelpAfterError('(add --help for usage)')
    .addHelpText('afterAll', EPILOG)
    .configureHelp({ sortSubcommands: false, showGlobalOptions: false });
  topicCommands(program, run);
  produceCommand(program, run);
  consumeCommand(program, run);
  groupCommands(program, run);
  partitionCommands(program, run);
  otherCommands(program, run);
  return program;
}

/** Parses and runs; resolves with the exit code. */
export async function runProgram(argv: readonly string[]): Promise<number> {
  const run: Run = { exitCode: ExitCode.OK };
  const program = buildProgram(run);
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return run.exitCode;
  } catch (e) {
    if (e instanceof CommanderError) {
      // --help exits 0; a parse error, or a command group without its subcommand (help printed, exit 1), is a usage error
      return e.exitCode === 0 ? ExitCode.OK : ExitCode.USAGE;
    }
    const { text, exitCode } = formatError(e);
    process.stderr.write(`${text}\n`);
    return exitCode;
  }
}
