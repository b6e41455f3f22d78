/**
 * scram add | delete | list: SCRAM credentials (AlterUserScramCredentials / DescribeUserScramCredentials),
 * as kafka-configs --alter --add-config 'SCRAM-SHA-256=[password=...]' --entity-type users does. The
 * password (--password, else the first line of stdin) is salted here; only the salted form is sent.
 */
import { alterScramCredentials, describeScramCredentials } from '../../client/scram.js';
import { SCRAM_MECHANISMS, type ScramMechanismName } from '../../security/sasl/scram.js';
import type { Context } from '../context.js';
import { CliError, CliErrorCode, UsageError } from '../errors.js';
import { renderTable } from '../output.js';
import { emit, itemError, jsonKafkaError, reportFailures, statusCell } from './common.js';
import { readLines } from './produce.js';

type Flags = Record<string, unknown>;

function mechanisms(f: Flags): ScramMechanismName[] {
  const given = (f['mechanism'] as string[] | undefined) ?? [];
  const names = given.length === 0 ? (Object.keys(SCRAM_MECHANISMS) as ScramMechanismName[]) : given.map((m) => m.toUpperCase());
  for (const m of names)
    if (!Object.hasOwn(SCRAM_MECHANISMS, m)) throw new UsageError(`--mechanism ${m}: expected SCRAM-SHA-256 or SCRAM-SHA-512`);
  return names as ScramMechanismName[];
}

async function password(f: Flags): Promise<string> {
  if (typeof f['password'] === 'string') return f['password'];
  for await (const line of readLines(process.stdin)) return line.toString('utf8');
  throw new CliError(CliErrorCode.INPUT, 'no password: give --password or one line on stdin');
}

/** Results of one alteration per mechanism (Kafka refuses one user altered twice in a request). */
async function alterEach(ctx: Context, user: string, mechs: ScramMechanismName[], upsert: string | null, iterations = 0): Promise<number> {
  const rows: { mechanism: string; errorCode: number; errorMessage: string | null; broker: string }[] = [];
  for (const mechanism of mechs) {
    const [r] =
      upsert === null
        ? await alterScramCredentials(ctx.client(), [], [{ user, mechanism }])
        : await alterScramCredentials(ctx.client(), [{ user, mechanism, password: upsert, iterations }], []);
    if (r !== undefined) rows.push({ mechanism, errorCode: r.errorCode, errorMessage: r.errorMessage, broker: r.broker });
  }
  emit(
    ctx,
    rows.map((r) => ({ user, mechanism: r.mechanism, error: r.errorCode === 0 ? null : jsonKafkaError(r.errorCode, r.errorMessage) })),
    () =>
      renderTable(
        ['USER', 'MECHANISM', 'STATUS'],
        rows.map((r) => [user, r.mechanism, statusCell(r.errorCode)]),
      ),
  );
  const api = 'AlterUserScramCredentials';
  return reportFailures(
    rows
      .filter((r) => r.errorCode !== 0)
      .map((r) => itemError(api, r.broker, `user ${user} (${r.mechanism})`, r.errorCode, r.errorMessage)),
  );
}

export async function scramAdd(ctx: Context, user: string, f: Flags): Promise<number> {
  return alterEach(ctx, user, mechanisms(f), await password(f), Number(f['iterations']));
}

export async function scramDelete(ctx: Context, user: string, f: Flags): Promise<number> {
  let mechs = mechanisms(f);
  if (((f['mechanism'] as string[] | undefined) ?? []).length === 0) {
    // every mechanism the user has
    const [d] = await describeScramCredentials(ctx.client(), [user]);
    if (d !== undefined && d.errorCode === 0)
      mechs = d.credentials.map((c) => c.mechanism).filter((m): m is ScramMechanismName => Object.hasOwn(SCRAM_MECHANISMS, m));
  }
  return alterEach(ctx, user, mechs, null);
}

export async function scramList(ctx: Context, users: string[]): Promise<number> {
  const res = await describeScramCredentials(ctx.client(), users.length === 0 ? null : users);
  emit(
    ctx,
    res.map((r) => ({
      user: r.name,
      credentials: r.credentials,
      error: r.errorCode === 0 ? null : jsonKafkaError(r.errorCode, r.errorMessage),
    })),
    () =>
      renderTable(
        ['USER', 'MECHANISM', 'ITERATIONS', 'STATUS'],
        res.flatMap((r) =>
          r.credentials.length === 0
            ? [[r.name, null, null, statusCell(r.errorCode)]]
            : r.credentials.map((c) => [r.name, c.mechanism, String(c.iterations), statusCell(r.errorCode)]),
        ),
      ),
  );
  const api = 'DescribeUserScramCredentials';
  return reportFailures(
    res.filter((r) => r.errorCode !== 0).map((r) => itemError(api, r.broker, `user ${r.name}`, r.errorCode, r.errorMessage)),
  );
}
