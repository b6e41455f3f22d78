/**
 * librdkafka's admin config APIs (DescribeConfigs, IncrementalAlterConfigs) through a small C program
 * (test/helpers/native/rdkafka-configs.c), built like the other librdkafka programs.
 */
import { join } from 'node:path';
import { buildRdkafkaProgram, librdkafkaMissing } from '../../compat/bench/native-build.js';
import { runProcess } from './process.js';
import { PROJECT_ROOT } from './project.js';

export { librdkafkaMissing };

export interface RdkConfigEntry {
  name: string;
  value: string | null;
  source: number;
  readOnly: boolean;
  sensitive: boolean;
  default: boolean;
  synonyms: [string, string | null, number][];
}

function binary(): string {
  return buildRdkafkaProgram(
    join(PROJECT_ROOT, 'test/helpers/native/rdkafka-configs.c'),
    join(PROJECT_ROOT, 'dist/test/helpers/native/rdkafka-configs'),
  );
}

async function run<T>(args: string[]): Promise<T> {
  const r = await runProcess(binary(), args, '', 30_000);
  if (r.code !== 0) throw new Error(`rdkafka-configs ${args.join(' ')} exited with ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout.toString()) as T;
}

export function rdkDescribe(
  bootstrap: string,
  type: 'topic' | 'broker',
  name: string,
): Promise<{ err: number; msg: string | null; configs: RdkConfigEntry[] }> {
  return run([bootstrap, 'describe', type, name]);
}

/** IncrementalAlterConfigs SET (value) or DELETE (value null) of one key. */
export function rdkAlter(
  bootstrap: string,
  type: 'topic' | 'broker',
  name: string,
  key: string,
  value: string | null,
): Promise<{ err: number; msg: string | null }> {
  return run(value === null ? [bootstrap, 'delete', type, name, key] : [bootstrap, 'set', type, name, key, value]);
}
