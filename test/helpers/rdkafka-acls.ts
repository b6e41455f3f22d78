/**
 * librdkafka's ACL admin APIs (CreateAcls, DescribeAcls, DeleteAcls) and DescribeConsumerGroups through small C programs
 * (test/helpers/native/rdkafka-acls.c, rdkafka-groups.c) on a SASL_PLAINTEXT listener with PLAIN, built like the other
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

/** One group of librdkafka's DescribeConsumerGroups result (test/helpers/native/rdkafka-groups.c). */
export interface RdkGroup {
  groupId: string;
  errorCode: number;
  members: number;
  message: string;
}

/** librdkafka's DescribeConsumerGroups as `user` over SASL_PLAINTEXT (PLAIN); throws when the whole request failed. */
export async function rdkDescribeGroups(bootstrap: string, user: string, password: string, groups: readonly string[]): Promise<RdkGroup[]> {
  const binary = buildRdkafkaProgram(
    join(PROJECT_ROOT, 'test/helpers/native/rdkafka-groups.c'),
    join(PROJECT_ROOT, 'dist/test/helpers/native/rdkafka-groups'),
  );
  const r = await runProcess(binary, [bootstrap, user, password, ...groups], '', 30_000);
  const lines = r.stdout
    .toString()
    .split('\n')
    .filter((l) => l !== '');
  if (r.code !== 0 || lines[0]?.startsWith('E\t')) throw new Error(`rdkafka-groups exited with ${r.code}: ${lines.join('; ')} ${r.stderr}`);
  return lines.map((l) => {
    const [groupId = '', code = '', members = '', message = ''] = l.split('\t');
    return { groupId, errorCode: Number(code), members: Number(members), message };
  });
}
