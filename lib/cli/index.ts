/**
 * The `gregor` tool commands (topic, produce, consume, group, offsets, cluster, debug): everything but
 * `start`, which lib/cli.ts runs. Scaffold: no tool command yet.
 */

/** Whether `command` (argv[0]) is a tool command rather than `start`. */
export function isToolCommand(_command: string | undefined): boolean {
  return false;
}

/** Runs a tool command; resolves with the exit code (0 ok, 1 error, 2 usage). */
export async function runTool(argv: readonly string[]): Promise<number> {
  console.error(`unknown command '${argv[0] ?? ''}'`);
  return 2;
}
