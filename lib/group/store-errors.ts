import { ErrorCode } from '../../protocol/generated/error-codes.js';

/** Kafka's mapping of append errors to what a group request answers. */
export function storeErrorFor(errorCode: number, forOffsets: boolean): number {
  switch (errorCode) {
    case ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
    case ErrorCode.NOT_ENOUGH_REPLICAS:
    case ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND:
      return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    case ErrorCode.NOT_LEADER_OR_FOLLOWER:
    case ErrorCode.KAFKA_STORAGE_ERROR:
      return ErrorCode.NOT_COORDINATOR;
    case ErrorCode.REQUEST_TIMED_OUT:
      return forOffsets ? ErrorCode.REQUEST_TIMED_OUT : ErrorCode.REBALANCE_IN_PROGRESS;
    case ErrorCode.MESSAGE_TOO_LARGE:
    case ErrorCode.RECORD_LIST_TOO_LARGE:
    case ErrorCode.INVALID_FETCH_SIZE:
      return forOffsets ? ErrorCode.INVALID_COMMIT_OFFSET_SIZE : ErrorCode.UNKNOWN_SERVER_ERROR;
    default:
      return errorCode;
  }
}
