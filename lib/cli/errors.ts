/** Exit codes and errors of the tool commands. */
import { ClientError } from '../client/errors.js';

/** Exit codes, as `--help` documents them. */
export const ExitCode = {
  OK: 0,
  /** the command failed: a broker error, a connection failure, bad input data, an unhealthy cluster */
  ERROR: 1,
  /** the command line was wrong (unknown option, bad value, missing argument) */
  USAGE: 2,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** Stable codes of CLI errors (besides the client's GREGOR_ERR_CLIENT_*); never rename one. */
export const CliErrorCode = {
  USAGE: 'GREGOR_ERR_CLI_USAGE',
  /** stdin held a record the chosen --input/--encoding cannot read */
  INPUT: 'GREGOR_ERR_CLI_INPUT',
  /** a file could not be read */
  FILE: 'GREGOR_ERR_CLI_FILE',
  /** group seek on a group with members (Kafka's reset-offsets refuses it too) */
  GROUP_NOT_EMPTY: 'GREGOR_ERR_CLI_GROUP_NOT_EMPTY',
  /** one or more items of a multi-item command failed (each is listed) */
  PARTIAL_FAILURE: 'GREGOR_ERR_CLI_PARTIAL_FAILURE',
  /** cluster health found the cluster unhealthy, or it did not become healthy in time */
  UNHEALTHY: 'GREGOR_ERR_CLI_UNHEALTHY',
} as const;
export type CliErrorCode = (typeof CliErrorCode)[keyof typeof CliErrorCode];

export class CliError extends Error {
  readonly code: CliErrorCode;
  readonly exitCode: ExitCode;
  constructor(code: CliErrorCode, message: string, exitCode: ExitCode = ExitCode.ERROR) {
    super(message);
    this.name = 'CliError';
    this.code = code;
    this.exitCode = exitCode;
  }
}

export class UsageError extends CliError {
  constructor(message: string) {
    super(CliErrorCode.USAGE, message, ExitCode.USAGE);
    this.name = 'UsageError';
  }
}

/** The stderr line for an error: `gregor: <message> [CODE]`. */
export function formatError(e: unknown): { text: string; exitCode: ExitCode } {
  if (e instanceof CliError) return { text: `gregor: ${e.message} [${e.code}]`, exitCode: e.exitCode };
  if (e instanceof ClientError) return { text: `gregor: ${e.message} [${e.code}]`, exitCode: ExitCode.ERROR };
  return { text: `gregor: ${e instanceof Error ? e.message : String(e)}`, exitCode: ExitCode.ERROR };
}
