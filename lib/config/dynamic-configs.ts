/**
 * Dynamic broker configs (Kafka's DynamicBrokerConfig): what AlterConfigs and IncrementalAlterConfigs
 * set on a BROKER resource, per broker (its id) and cluster-wide (''), kept in the metadata store (the
 * local metadata file, or etcd in cluster mode, so a cluster-wide default reaches every broker) and
 * applied to the running BrokerConfig as soon as the store has them. Kafka's rules: read-only keys
 * cannot be updated dynamically, per-broker keys (listeners, SSL/SASL) not at the cluster-wide level.
 */
import { BrokerConfig, ConfigError } from '../config.js';
import type { MetadataStore } from '../metadata/store.js';
import { kafkaBrokerKey } from './kafka-keys.js';

/** A refusal: Kafka answers it with INVALID_REQUEST and this message. */
export class DynamicConfigError extends Error {}

/**
 * A running part's own check of a change (Kafka's BrokerReconfigurable.validateReconfiguration):
 * given the resource and its whole new set, a reason to refuse it, or undefined.
 */
export type ReconfigurationCheck = (resource: string, next: Readonly<Record<string, string>>) => string | undefined;

export class DynamicBrokerConfigs {
  private readonly appliedListeners: (() => void)[] = [];
  private readonly checks: ReconfigurationCheck[] = [];

  private constructor(
    private readonly store: MetadataStore,
    private readonly config: BrokerConfig,
    private readonly log: (err: unknown) => void,
  ) {}

  /** Applies the stored dynamic configs to `config`, and again whenever the store's change. */
  static open(store: MetadataStore, config: BrokerConfig, log: (err: unknown) => void): DynamicBrokerConfigs {
    const d = new DynamicBrokerConfigs(store, config, log);
    d.apply();
    store.onChange((c) => {
      if (c.kind === 'brokerConfigs') d.apply();
    });
    return d;
  }

  /** Called after each change is applied (open logs re-resolve their topic defaults). */
  onApplied(f: () => void): void {
    this.appliedListeners.push(f);
  }

  /** Adds a check every change must pass before it is stored (refused with INVALID_REQUEST and its reason). */
  addCheck(check: ReconfigurationCheck): void {
    this.checks.push(check);
  }

  /** The stored configs of one resource ('' or a broker id). */
  current(resource: string): Record<string, string> {
    return this.store.brokerConfigs(resource);
  }

  /**
   * Checks `next` (the resource's whole new set) by Kafka's rules and, unless validateOnly, stores it
   * (applied once the store has it). Throws DynamicConfigError.
   */
  async replace(resource: string, next: Record<string, string>, validateOnly: boolean): Promise<void> {
    const where = `ConfigResource(type=BROKER, name='${resource}')`;
    const before = this.current(resource);
    const changed = Object.keys(next).filter((k) => next[k] !== before[k]);
    const readOnly = changed.filter((k) => {
      const kk = kafkaBrokerKey(k);
      return kk === undefined || kk.mode === 'read-only';
    });
    if (readOnly.length > 0)
      throw new DynamicConfigError(
        `Invalid config value for resource ${where}: Cannot update these configs dynamically: Set(${readOnly.join(', ')})`,
      );
    const perBroker = changed.filter((k) => kafkaBrokerKey(k)?.mode === 'per-broker');
    if (resource === '' && perBroker.length > 0) {
      throw new DynamicConfigError(
        `Invalid config value for resource ${where}: Cannot update these configs at default cluster level, broker id must be specified: Set(${perBroker.join(', ')})`,
      );
    }
    for (const [k, v] of Object.entries(next)) {
      try {
        BrokerConfig.parseDynamic(k, v);
      } catch (e) {
        const msg = e instanceof ConfigError ? e.message.replace(/^GREGOR_ERR_CONFIG: /, '') : String(e);
        throw new DynamicConfigError(`Invalid config value for resource ${where}: ${msg}`);
      }
    }
    for (const check of this.checks) {
      const reason = check(resource, next);
      if (reason !== undefined) throw new DynamicConfigError(`Invalid config value for resource ${where}: ${reason}`);
    }
    if (!validateOnly) await this.store.setBrokerConfigs(resource, next);
  }

  private apply(): void {
    try {
      this.config.setDynamic(this.current(String(this.config.nodeId)), this.current(''));
    } catch (e) {
      // a value another broker stored that this one cannot parse: keep the previous ones
      this.log(e);
      return;
    }
    for (const f of this.appliedListeners) f();
  }
}
