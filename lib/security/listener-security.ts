/**
 * What a listener's security protocol (listener.security.protocol.map) asks of its connections: TLS
 * for SSL and SASL_SSL (lib/network/tls.ts), SASL for SASL_PLAINTEXT and SASL_SSL
 * (lib/security/sasl/). Read at construction, so that bad settings stop the start with the key at fault.
 */
import type { BrokerConfig } from '../config.js';
import type { MetadataStore } from '../metadata/store.js';
import { listenerTlsSettings, type TlsListenerSettings } from '../network/tls.js';
import { SaslSession } from './sasl/session.js';
import { listenerSaslSettings, type SaslListenerSettings } from './sasl/settings.js';

export interface ListenerSecurity {
  protocol: string;
  tls?: TlsListenerSettings;
  sasl?: SaslListenerSettings;
}

export function listenerSecurity(config: BrokerConfig, listenerName: string): ListenerSecurity {
  const protocol = config.securityProtocol(listenerName);
  return {
    protocol,
    ...(protocol === 'SSL' || protocol === 'SASL_SSL' ? { tls: listenerTlsSettings(config, listenerName) } : {}),
    ...(protocol === 'SASL_PLAINTEXT' || protocol === 'SASL_SSL' ? { sasl: listenerSaslSettings(config, listenerName) } : {}),
  };
}

/** A new connection's SASL session on a SASL listener; SCRAM credentials come from the metadata store. */
export function saslSessions(settings: SaslListenerSettings, metadata: () => MetadataStore): () => SaslSession {
  const lookup = (mechanism: string, user: string) => metadata().scramCredentials().get(user)?.[mechanism];
  return () => new SaslSession(settings, lookup);
}
