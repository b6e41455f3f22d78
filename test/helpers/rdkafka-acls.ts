/**
 * librdkafka's ACL admin APIs (CreateAcls, DescribeAcls, DeleteAcls) through a small C program
 * (test/helpers/native/rdkafka-acls.c) on a SASL_PLAINTEXT listener with PLAIN, built like the other
 * librdkafka programs.
 */
import { join } from 'node:path';
import { buildRdkafkaProgram, librdkafkaMissing } from '../../compat/bench/native-build.js';
import { runProcess } from './process.js';
import { PROJECT_ROOT } from './project.js';

export { librdkafkaMissing };

/** [resourceType, name, patternType, principal, host, operation, permissionType] (Kafka's codes; null: any in a filter). */
export type RdkAcl = [number, string | null, number, string | null, string | null, number, number];

export async function rdkAcls(
  bootstrap: string,
  user: string,
  password: string,
  cmd: 'create' | 'describe' | 'delete',
  acl: RdkAcl,
): Promise<{ err: number; msg: string | null; acls: RdkAcl[] }> {
  const binary = buildRdkafkaProgram(
    join(PROJECT_ROOT, 'test/helpers/native/rdkafka-acls.c'),
    join(PROJECT_ROOT, 'dist/test/helpers/native/rdkafka-acls'),
  );
  const args = [bootstrap, user, password, cmd, ...acl.map((v) => (v === null ? '-' : String(v)))];
  const r = await runProcess(binary, args, '', 30_000);
  if (r.code !== 0) throw new Error(`rdkafka-acls ${args.join(' ')} exited with ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout.toString()) as { err: number; msg: string | null; acls: RdkAcl[] };
}
