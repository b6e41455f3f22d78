/**
 * Errors of the protocol client. Every error names where it happened (a broker, or the bootstrap
 * address tried) and, for an error the broker answered, the Kafka error name and code, e.g.
 * `CreateTopics on broker 1 (127.0.0.1:9092): topic 'orders': TOPIC_ALREADY_EXISTS (36): Topic 'orders' already exists.`
 */
import { errorName, isRetriable } from '../../protocol/generated/error-codes.js';

/** Stable codes of client errors; never renumber or rename one. */
export const ClientErrorCode = {
  /** no TCP connection could be made (refused, unresolvable host, connect timeout) */
  CONNECT: 'GREGOR_ERR_CLIENT_CONNECT',
  /** the broker did not answer a request in time */
  TIMEOUT: 'GREGOR_ERR_CLIENT_TIMEOUT',
  /** the connection closed with requests outstanding */
  DISCONNECTED: 'GREGOR_ERR_CLIENT_DISCONNECTED',
  /** the broker offers no version of an API that we can encode */
  UNSUPPORTED_API: 'GREGOR_ERR_CLIENT_UNSUPPORTED_API',
  /** the broker answered with a Kafka error code */
  KAFKA: 'GREGOR_ERR_CLIENT_KAFKA',
  /** a response could not be decoded or did not match its request */
  PROTOCOL: 'GREGOR_ERR_CLIENT_PROTOCOL',
  /** a topic, partition, broker or group that was asked for does not exist */
  NOT_FOUND: 'GREGOR_ERR_CLIENT_NOT_FOUND',
  /** the operation was given up after retries or a deadline */
  GAVE_UP: 'GREGOR_ERR_CLIENT_GAVE_UP',
} as const;
export type ClientErrorCode = (typeof ClientErrorCode)[keyof typeof ClientErrorCode];

export interface ClientErrorInfo {
  /** where it happened: "broker 1 (127.0.0.1:9092)" or "bootstrap 127.0.0.1:9092" */
  broker?: string;
  /** the API of the failed request (Kafka's name, e.g. CreateTopics) */
  api?: string;
  /** Kafka error code the broker answered */
  kafkaCode?: number;
  /** what the error is about, e.g. "topic 'orders'" or "orders-0" */
  subject?: string;
  cause?: unknown;
}

export class ClientError extends Error {
  readonly code: ClientErrorCode;
  readonly broker: string | undefined;
  readonly api: string | undefined;
  readonly kafkaCode: number | undefined;
  readonly subject: string | undefined;

  constructor(code: ClientErrorCode, message: string, info: ClientErrorInfo = {}) {
    super(message, info.cause === undefined ? undefined : { cause: info.cause });
    this.name = 'ClientError';
    this.code = code;
    this.broker = info.broker;
    this.api = info.api;
    this.kafkaCode = info.kafkaCode;
    this.subject = info.subject;
  }

  /** Kafka's name of the error code, e.g. TOPIC_ALREADY_EXISTS; undefined for non-Kafka errors. */
  get kafkaError(): string | undefined {
    return this.kafkaCode === undefined ? undefined : errorName(this.kafkaCode);
  }

  /** Whether retrying the request may succeed (Kafka's retriable flag, or a lost connection). */
  get retriable(): boolean {
    if (this.kafkaCode !== undefined) return isRetriable(this.kafkaCode);
    return this.code === ClientErrorCode.DISCONNECTED || this.code === ClientErrorCode.TIMEOUT;
  }
}

/** "NAME (code)", as CLI errors print a Kafka error. */
export function describeKafkaCode(code: number): string {
  return `${errorName(code)} (${code})`;
}

/**
 * The error for a Kafka error code in a response: `<api> on <broker>: <subject>: NAME (code)[: message]`.
 */
export function kafkaError(code: number, where: { api: string; broker: string; subject?: string; message?: string | null }): ClientError {
  const parts = [`${where.api} on ${where.broker}`];
  if (where.subject !== undefined) parts.push(where.subject);
  parts.push(describeKafkaCode(code));
  if (where.message !== undefined && where.message !== null && where.message !== '') parts.push(where.message);
  const info: ClientErrorInfo = { broker: where.broker, api: where.api, kafkaCode: code };
  if (where.subject !== undefined) info.subject = where.subject;
  return new ClientError(ClientErrorCode.KAFKA, parts.join(': '), info);
}

/** Throws kafkaError when `code` is not 0. */
export function checkKafkaCode(
  code: number | undefined,
  where: { api: string; broker: string; subject?: string; message?: string | null },
): void {
  if (code !== undefined && code !== 0) throw kafkaError(code, where);
}
