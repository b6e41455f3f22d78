/** Client quotas: the broker's ClientQuotaManager, over the metadata store's quotas and the quota.window.* keys. */
import type { BrokerConfig } from '../config.js';
import type { MetadataStore } from '../metadata/store.js';
import { QuotaKey } from './entity.js';
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
