/**
 * The cleaner's settings from the broker config, and the running cleaner kept in step with the
 * dynamic broker configs (Kafka's LogCleaner is a BrokerReconfigurable of log.cleaner.threads,
 * dedupe.buffer.size, io.buffer.size, io.buffer.load.factor, io.max.bytes.per.second and
 * backoff.ms). The topic defaults among the log.cleaner.* keys (min.cleanable.ratio, the compaction
 * lags, delete.retention.ms) reach the logs as every topic default does (TopicManager.refreshLogConfigs).
 */
import type { BrokerConfig } from '../../config.js';
import type { DynamicBrokerConfigs } from '../../config/dynamic-configs.js';
import type { LogLogger } from '../log-loader.js';
import type { LogManager } from '../log-dirs.js';
import { LogCleaner } from './cleaner.js';
import type { CleanerSettings } from './cleaner.js';

export function cleanerSettings(config: BrokerConfig): CleanerSettings {
  return {
    threads: config.int('log.cleaner.threads'),
    dedupeBufferSize: config.long('log.cleaner.dedupe.buffer.size') ?? 134217728,
    ioMaxBytesPerSecond: Number(config.get('log.cleaner.io.max.bytes.per.second') ?? Number.MAX_VALUE),
    backoffMs: config.long('log.cleaner.backoff.ms') ?? 15000,
    ioBufferSize: config.int('log.cleaner.io.buffer.size'),
    loadFactor: Number(config.get('log.cleaner.io.buffer.load.factor') ?? 0.9),
  };
}

/** Starts the cleaner over every log dir when log.cleaner.enable (read-only: fixed at start) is set; null otherwise. */
export function startLogCleaner(
  config: BrokerConfig,
  dynamicConfigs: DynamicBrokerConfigs,
  logManager: LogManager,
  logger: LogLogger,
): LogCleaner | null {
  if (!config.bool('log.cleaner.enable')) return null;
  const cleaner = new LogCleaner(logManager.logDirs(), () => logManager.all(), { ...cleanerSettings(config), logger });
  dynamicConfigs.addCheck((resource, next) => {
    const threads = threadsAfter(config, dynamicConfigs, resource, next);
    return threads === undefined ? undefined : threadsChangeError(cleaner.currentSettings.threads, threads);
  });
  dynamicConfigs.onApplied(() => cleaner.reconfigure(cleanerSettings(config)));
  cleaner.start();
  return cleaner;
}

const THREADS = 'log.cleaner.threads';

/** The log.cleaner.threads this broker would run with once `resource` holds `next`; undefined when the change does not move it. */
function threadsAfter(
  config: BrokerConfig,
  dynamicConfigs: DynamicBrokerConfigs,
  resource: string,
  next: Readonly<Record<string, string>>,
): number | undefined {
  const mine = String(config.nodeId);
  const own = dynamicConfigs.current(mine)[THREADS];
  let raw: string | undefined;
  if (resource === mine) raw = next[THREADS] ?? dynamicConfigs.current('')[THREADS];
  else if (resource === '' && own === undefined) raw = next[THREADS];
  else return undefined;
  const threads = raw === undefined ? Number(config.staticValue(THREADS)) : Number(raw);
  return threads === config.int(THREADS) ? undefined : threads;
}

/** Kafka's LogCleaner.validateReconfiguration: at least one thread, and at most halved or doubled at a time. */
export function threadsChangeError(current: number, next: number): string | undefined {
  if (next < 1) return 'Log cleaner threads should be at least 1';
  if (next < Math.floor(current / 2)) return `Log cleaner threads cannot be reduced to less than half the current value ${current}`;
  if (next > current * 2) return `Log cleaner threads cannot be increased to more than double the current value ${current}`;
  return undefined;
}
