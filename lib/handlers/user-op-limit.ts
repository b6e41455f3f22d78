/**
 * Kafka's controller writes at most 10,000 metadata records for one user request
 * (QuorumController.MAX_RECORDS_PER_USER_OP): a CreateTopics or CreatePartitions request that would
 * write more is refused as a whole, every topic answered POLICY_VIOLATION. Kafka counts, per topic, one
 * topic record, one record per (new) partition and one per config. gregor counts the same way, before
 * it builds anything, so a request for 2^31-1 partitions is answered at once instead of exhausting memory.
 */
export const MAX_RECORDS_PER_USER_OP = 10_000;
export const EXCESSIVE_BATCH_MESSAGE = 'Unable to perform excessively large batch operation.';
