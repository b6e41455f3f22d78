/**
 * Builds the C librdkafka programs (compat/bench/native/*.c and test/helpers/native/rdkafka-mock.c)
 * with the machine's cc against the librdkafka that scripts/setup-test-deps.sh builds inside
 * @confluentinc/kafka-javascript. Every program is compiled together with the code they share,
 * compat/bench/native/rdk-common.{c,h}, and rebuilt when its binary is older than its source, than
 * either shared file, or than anything else the caller names.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ROOT } from '../lib/paths.js';

export const CKJS = join(ROOT, 'compat/clients/confluent/node_modules/@confluentinc/kafka-javascript');
/** librdkafka's source tree (src/ holds the public and internal headers, the top its build's config.h) */
export const RDK_SRC = join(CKJS, 'deps/librdkafka');
/** where librdkafka.so is built */
export const RDK_LIB = join(CKJS, 'build/deps');
const NATIVE = join(ROOT, 'compat/bench/native');
const COMMON_SOURCE = join(NATIVE, 'rdk-common.c');
const COMMON_HEADER = join(NATIVE, 'rdk-common.h');

/** Why the programs cannot be built here, or null when they can. */
export function librdkafkaMissing(): string | null {
  if (!existsSync(join(RDK_SRC, 'src/rdkafka_mock.h')) || !existsSync(join(RDK_LIB, 'librdkafka.so'))) {
    return `librdkafka is not built under ${CKJS}; run \`bash scripts/setup-test-deps.sh\` first`;
  }
  return null;
}

export interface BuildOptions {
  /** more -I directories, after this folder's and librdkafka's src/ */
  includes?: string[];
  /** more files whose change calls for a rebuild */
  dependsOn?: string[];
}

/** `binary` built from `source` and rdk-common.c, when missing or older than any of its inputs; returns binary. */
export function buildRdkafkaProgram(source: string, binary: string, opts: BuildOptions = {}): string {
  const missing = librdkafkaMissing();
  if (missing !== null) throw new Error(missing);
  const newest = Math.max(...[source, COMMON_SOURCE, COMMON_HEADER, ...(opts.dependsOn ?? [])].map((f) => statSync(f).mtimeMs));
  if (!existsSync(binary) || statSync(binary).mtimeMs < newest) {
    mkdirSync(dirname(binary), { recursive: true });
    const includes = [`-I${NATIVE}`, `-I${join(RDK_SRC, 'src')}`, ...(opts.includes ?? []).map((d) => `-I${d}`)];
    execFileSync('cc', ['-O2', '-o', binary, source, COMMON_SOURCE, ...includes, `-L${RDK_LIB}`, '-lrdkafka', `-Wl,-rpath,${RDK_LIB}`], {
      stdio: 'inherit',
    });
  }
  return binary;
}
