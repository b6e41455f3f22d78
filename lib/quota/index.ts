/** Client quotas: the broker's ClientQuotaManager and connection creation rates, over the metadata store's quotas and the quota.window.* keys. */
import type { BrokerConfig } from '../config.js';
import type { MetadataStore } from '../metadata/store.js';
import { ConnectionCreationRates } from '../network/connection-rate.js';
import { entityKey, QuotaKey } from './entity.js';
import { ClientQuotaManager, type ClientQuotaType, type QuotaWindow } from './manager.js';

export function clientQuotaManager(config: BrokerConfig, metadata: MetadataStore): ClientQuotaManager {
  const client: QuotaWindow = { samples: config.int('quota.window.num'), windowMs: config.int('quota.window.size.seconds') * 1000 };
  const controller: QuotaWindow = {
    samples: config.int('controller.quota.window.num'),
    windowMs: config.int('controller.quota.window.size.seconds') * 1000,
  };
  return new ClientQuotaManager(
    () => metadata.clientQuotas(),
    (type: ClientQuotaType) => (type === QuotaKey.CONTROLLER_MUTATION_RATE ? controller : client),
  );
}

/** KIP-612 connection creation rates: max.connection.creation.rate (per listener too) and ip entities' connection_creation_rate. */
export function connectionCreationRates(config: BrokerConfig, metadata: MetadataStore): ConnectionCreationRates {
  const ipRate = (ip: string): number | undefined => {
    const q = metadata.clientQuotas();
    if (q.size === 0) return undefined;
    return (
      q.get(entityKey({ ip }))?.[QuotaKey.CONNECTION_CREATION_RATE] ?? q.get(entityKey({ ip: null }))?.[QuotaKey.CONNECTION_CREATION_RATE]
    );
  };
  return new ConnectionCreationRates(
    {
      brokerRate: () => config.int('max.connection.creation.rate'),
      listenerRate: (l) => Number(config.listenerValue(l, 'max.connection.creation.rate')),
      ipRate,
    },
    config.int('quota.window.num'),
    config.int('quota.window.size.seconds') * 1000,
  );
}
