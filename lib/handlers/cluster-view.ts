/**
 * The cluster as Metadata, DescribeCluster and FindCoordinator describe it: one node (this broker on
 * the listener asked through), or the live brokers an etcd store watches.
 */
import type { BrokerServices } from '../services.js';

export interface BrokerAddress {
  nodeId: number;
  host: string;
  port: number;
  rack: string | null;
}

/** Live brokers reachable on `listenerName` (a broker without that listener is left out, as Kafka does). */
export function liveBrokers(s: BrokerServices, listenerName: string): BrokerAddress[] {
  if (s.metadata.kind === 'local') {
    const listener = s.advertisedListener(listenerName);
    return listener === undefined
      ? []
      : [{ nodeId: s.nodeId, host: listener.host, port: listener.port, rack: s.config.string('broker.rack') }];
  }
  const out: BrokerAddress[] = [];
  for (const b of s.metadata.brokers()) {
    const ep = b.endpoints.find((e) => e.listener === listenerName);
    if (ep !== undefined) out.push({ nodeId: b.nodeId, host: ep.host, port: ep.port, rack: b.rack });
  }
  return out.sort((a, b) => a.nodeId - b.nodeId);
}

/** The address of `nodeId` on `listenerName`, when that broker is live. */
export function brokerAddress(s: BrokerServices, listenerName: string, nodeId: number): BrokerAddress | undefined {
  return liveBrokers(s, listenerName).find((b) => b.nodeId === nodeId);
}

/** The controller clients are told of: this node alone, or the elected one (-1 between elections). */
export function controllerId(s: BrokerServices): number {
  return s.metadata.kind === 'local' ? s.nodeId : s.metadata.controllerId();
}
