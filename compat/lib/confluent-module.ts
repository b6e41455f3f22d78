/**
 * Loads @confluentinc/kafka-javascript (librdkafka 2.15) from compat/clients/confluent, where
 * scripts/setup-test-deps.sh builds it; fails with the command to run when it is not there.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { ROOT } from './paths.js';

// The package has no type declarations that fit every use here; callers treat it as untyped.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type ConfluentModule = any;

let cached: unknown;

export function loadConfluent(): ConfluentModule {
  if (cached !== undefined) return cached;
  try {
    cached = createRequire(join(ROOT, 'compat/clients/confluent/package.json'))('@confluentinc/kafka-javascript');
    return cached;
  } catch (e) {
    throw new Error(
      `@confluentinc/kafka-javascript cannot be loaded (${(e as Error).message.split('\n')[0]}); run \`bash scripts/setup-test-deps.sh\` first`,
      { cause: e },
    );
  }
}

/**
 * A logger for the binding's KafkaJS-style client that keeps the error lines (librdkafka's error
 * events, a fatal error or a SASL failure among them) in `errors` and drops the rest.
 */
export function errorCollectingLogger(): {
  errors: string[];
  logger: Record<'error' | 'warn' | 'info' | 'debug' | 'setLogLevel', (m?: string) => void> & { namespace(): unknown };
} {
  const errors: string[] = [];
  const logger = {
    error: (m?: string) => void errors.push(m ?? ''),
    warn: () => undefined,
    info: () => undefined,
    debug: () => undefined,
    setLogLevel: () => undefined,
    namespace() {
      return this;
    },
  };
  return { errors, logger };
}
