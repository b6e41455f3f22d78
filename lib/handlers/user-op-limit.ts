/**
 * Kafka's controller writes at most 10,000 metadata records for one user request
 * (QuorumController.MAX_RECORDS_PER_USER_OP): a CreateTopics or CreatePartitions request that would
 * write more is refused as a whole, every topic answered POLICY_VIOLATION. Kafka counts, per topic, one
 * topic record, one record per (new) partition and one per config. gregor counts the same way, before
 * it builds anything, so a request for 2^31-1 partitions is answered at once instead of exhausting memory.
 * Only the topics the principal is authorized for count (Kafka authorizes first).
 */
import { ErrorCode } from '../../protocol/generated/error-codes.js';

export const MAX_RECORDS_PER_USER_OP = 10_000;
export const EXCESSIVE_BATCH_MESSAGE = 'Unable to perform excessively large batch operation.';

/** One topic's answer to a request over the limit. */
export interface OverLimitResult {
  name: string;
  errorCode: number;
  errorMessage: string;
}

/**
 * The answer to a CreateTopics / CreatePartitions request whose authorized topics would write more than
 * MAX_RECORDS_PER_USER_OP records. Kafka's ControllerApis answers duplicates and authorizes before the
 * controller counts, so a topic the principal may not touch keeps TOPIC_AUTHORIZATION_FAILED, a duplicate
 * INVALID_REQUEST, and only the rest get POLICY_VIOLATION.
 */
export function overLimitResults(counts: ReadonlyMap<string, number>, authorized: (name: string) => boolean): OverLimitResult[] {
  return [...counts].map(([name, n]) => {
    if (n > 1) return { name, errorCode: ErrorCode.INVALID_REQUEST, errorMessage: 'Duplicate topic name.' };
    if (!authorized(name)) return { name, errorCode: ErrorCode.TOPIC_AUTHORIZATION_FAILED, errorMessage: 'Authorization failed.' };
    return { name, errorCode: ErrorCode.POLICY_VIOLATION, errorMessage: EXCESSIVE_BATCH_MESSAGE };
  });
}

/** A per-topic authorization check asked at most once per name (the count and the answers both need it). */
export function oncePerTopic(check: (name: string) => boolean): (name: string) => boolean {
  const decided = new Map<string, boolean>();
  return (name) => {
    let ok = decided.get(name);
    if (ok === undefined) decided.set(name, (ok = check(name)));
    return ok;
  };
}
