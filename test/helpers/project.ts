import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The checkout's root (tests run compiled from dist/test/...). */
export const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
/** Kafka's reference data, present on developer machines and in CI beside the checkout. */
export const KAFKA_REFERENCE = resolve(PROJECT_ROOT, '../shared/kafka-reference');
