/** ACL test helpers. */
import { Kafka, logLevel } from 'kafkajs';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { RawClient } from './raw-client.js';
import { plainJaas } from './sasl.js';
import { startLoggedBroker, type LoggedBroker } from './tls.js';

/** A kafkajs client of `user` over SASL PLAIN (no retries: a denial shows at once). */
export function plainKafka(bootstrap: string, user: string, password: string): Kafka {
  return new Kafka({
    brokers: [bootstrap],
    clientId: `acl-${user}`,
    sasl: { mechanism: 'plain', username: user, password },
    retry: { retries: 0 },
    logLevel: logLevel.NOTHING,
  });
}

/** The Kafka error name a kafkajs call failed with (searching wrapped errors), or 'OK'. */
export async function outcome(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'OK';
  } catch (e) {
    let cur: unknown = e;
    for (let depth = 0; cur !== undefined && cur !== null && depth < 6; depth++) {
      const o = cur as {
        type?: unknown;
        errors?: unknown[];
        originalError?: unknown;
        cause?: unknown;
        partitions?: { error?: unknown }[];
        groups?: { error?: unknown }[];
      };
      if (typeof o.type === 'string' && /AUTHORIZATION_FAILED|UNKNOWN_TOPIC|SECURITY_DISABLED|INVALID/.test(o.type)) return o.type;
      cur =
        o.originalError ?? o.cause ?? o.errors?.[0] ?? [...(o.partitions ?? []), ...(o.groups ?? [])].find((p) => p.error != null)?.error;
    }
    return (e as Error).name;
  }
}

/**
 * A broker with one SASL_PLAINTEXT listener (PLAIN, `users` from the JAAS config), the ACL authorizer
 * (Kafka's StandardAuthorizer name) and User:admin as super user, one partition per topic; `extra` on top.
 */
export function startAclBroker(users: Record<string, string>, extra: Record<string, string> = {}): Promise<LoggedBroker> {
  return startLoggedBroker(['SASL_PLAINTEXT'], {
    'sasl.enabled.mechanisms': 'PLAIN',
    'listener.name.sasl_plaintext.plain.sasl.jaas.config': plainJaas(users),
    'authorizer.class.name': 'org.apache.kafka.metadata.authorizer.StandardAuthorizer',
    'super.users': 'User:admin',
    'num.partitions': 1,
    ...extra,
  });
}

/** A KIP-848 ConsumerGroupHeartbeat v0 joining `groupId` (member epoch 0) subscribed to `topics`: the error code. */
export async function consumerGroupJoin(c: RawClient, groupId: string, memberId: string, topics: string[]): Promise<number> {
  const r = await c.request<{ errorCode: number }>(ApiKey.ConsumerGroupHeartbeat, 0, {
    groupId,
    memberId,
    memberEpoch: 0,
    instanceId: null,
    rackId: null,
    rebalanceTimeoutMs: 30000,
    subscribedTopicNames: topics,
    serverAssignor: null,
    topicPartitions: [],
  });
  return r.errorCode;
}

/** A KIP-932 ShareGroupHeartbeat v1 joining `groupId` (member epoch 0) subscribed to `topics`: the error code. */
export async function shareGroupJoin(c: RawClient, groupId: string, memberId: string, topics: string[]): Promise<number> {
  const r = await c.request<{ errorCode: number }>(ApiKey.ShareGroupHeartbeat, 1, {
    groupId,
    memberId,
    memberEpoch: 0,
    rackId: null,
    subscribedTopicNames: topics,
  });
  return r.errorCode;
}

interface ShareFetchTopic {
  topicId: string;
  partitions: {
    partitionIndex: number;
    acknowledgementBatches: { firstOffset: bigint; lastOffset: bigint; acknowledgeTypes: number[] }[];
  }[];
}

/** A ShareFetch v1 body that does not wait and asks for up to 10 records of `topics`. */
export function shareFetchBody(groupId: string, memberId: string, shareSessionEpoch: number, topics: ShareFetchTopic[]) {
  return {
    groupId,
    memberId,
    shareSessionEpoch,
    maxWaitMs: 0,
    minBytes: 1,
    maxBytes: 1 << 20,
    maxRecords: 10,
    batchSize: 10,
    topics,
    forgottenTopicsData: [],
  };
}
