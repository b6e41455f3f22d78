/**
 * Dynamic broker configs (Kafka's DynamicBrokerConfig): what AlterConfigs and IncrementalAlterConfigs
 * set on a BROKER resource, per broker (its id) and cluster-wide (''), persisted across restarts and
 * applied to the running BrokerConfig at once. Kafka's rules: read-only keys cannot be updated
 * dynamically, per-broker keys (listeners, SSL/SASL) not at the cluster-wide default level.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BrokerConfig, ConfigError } from '../config.js';
import { writeFileAtomic } from '../metadata/local-store.js';
import { kafkaBrokerKey } from './kafka-keys.js';

const FILE = 'dynamic-broker-configs.json';

interface Stored {
  version: 1;
  /** '' is the cluster-wide default; other keys are broker ids. */
  resources: Record<string, Record<string, string>>;
}

/** A refusal with the Kafka error it maps to. */
export class DynamicConfigError extends Error {
  constructor(
    readonly kind: 'request' | 'config',
    message: string,
  ) {
    super(message);
  }
}

export class DynamicBrokerConfigs {
  private state: Stored = { version: 1, resources: {} };

  private constructor(
    private readonly dir: string,
    private readonly config: BrokerConfig,
  ) {}

  /** Loads the stored dynamic configs of `dir` and applies them to `config`. */
  static async open(dir: string, config: BrokerConfig): Promise<DynamicBrokerConfigs> {
    const d = new DynamicBrokerConfigs(dir, config);
    try {
      d.state = JSON.parse(await readFile(join(dir, FILE), 'utf8')) as Stored;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
    d.apply();
    return d;
  }

  /** The stored configs of one resource ('' or a broker id). */
  current(resource: string): Record<string, string> {
    return { ...(this.state.resources[resource] ?? {}) };
  }

  /**
   * Checks `next` (the resource's whole new set) by Kafka's rules and, unless validateOnly, stores and
   * applies it. Throws DynamicConfigError.
   */
  async replace(resource: string, next: Record<string, string>, validateOnly: boolean): Promise<void> {
    const where = `ConfigResource(type=BROKER, name='${resource}')`;
    const changed = Object.keys(next).filter((k) => next[k] !== this.current(resource)[k]);
    const readOnly = changed.filter((k) => {
      const kk = kafkaBrokerKey(k);
      return kk === undefined || kk.mode === 'read-only';
    });
    if (readOnly.length > 0)
      throw new DynamicConfigError(
        'request',
        `Invalid config value for resource ${where}: Cannot update these configs dynamically: Set(${readOnly.join(', ')})`,
      );
    const perBroker = changed.filter((k) => kafkaBrokerKey(k)?.mode === 'per-broker');
    if (resource === '' && perBroker.length > 0) {
      throw new DynamicConfigError(
        'request',
        `Invalid config value for resource ${where}: Cannot update these configs at default cluster level, broker id must be specified: Set(${perBroker.join(', ')})`,
      );
    }
    for (const [k, v] of Object.entries(next)) {
      try {
        BrokerConfig.parseDynamic(k, v);
      } catch (e) {
        const msg = e instanceof ConfigError ? e.message.replace(/^GREGOR_ERR_CONFIG: /, '') : String(e);
        throw new DynamicConfigError('request', `Invalid config value for resource ${where}: ${msg}`);
      }
    }
    if (validateOnly) return;
    const resources = Object.fromEntries(Object.entries(this.state.resources).filter(([r]) => r !== resource));
    if (Object.keys(next).length > 0) resources[resource] = { ...next };
    const state: Stored = { version: 1, resources };
    await writeFileAtomic(this.dir, FILE, JSON.stringify(state, null, 1));
    this.state = state;
    this.apply();
  }

  private apply(): void {
    this.config.setDynamic(this.current(String(this.config.nodeId)), this.current(''));
  }
}
