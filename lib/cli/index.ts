/**
 * The `gregor` tool commands (topic, produce, consume, group, offsets, cluster, debug): everything but
 * `start`, which lib/cli.ts runs. This module stays tiny: the command line is parsed by program.ts,
 * and each command's implementation (with the protocol client) is imported only when it runs.
 */

/** The tool commands (argv[0]). */
export const TOOL_COMMANDS: readonly string[] = [
  'topic',
  'produce',
  'consume',
  'group',
  'partitions',
  'offsets',
  'log-dirs',
  'scram',
  'cluster',
  'debug',
  'dev',
];

/** Whether `command` (argv[0]) is a tool command rather than `start`. */
export function isToolCommand(command: string | undefined): boolean {
  return command !== undefined && TOOL_COMMANDS.includes(command);
}

/** Runs a tool command; resolves with the exit code (0 ok, 1 error, 2 usage). */
export async function runTool(argv: readonly string[]): Promise<number> {
  const { runProgram } = await import('./program.js');
  return runProgram(argv);
}
