/** gregor's Kafka protocol client (used by the `gregor` tool commands; works against any Kafka). */
export { parseAddress, parseBootstrap, formatAddress, type BrokerAddress } from './address.js';
export { KafkaClient, withRetries, isRetriableError, type ClientOptions } from './client.js';
export { BrokerConnection, apiName, type ConnectionOptions, type RequestOptions } from './connection.js';
export { ClientError, ClientErrorCode, describeKafkaCode, kafkaError } from './errors.js';
export { formatTopicId, type BrokerInfo, type ClusterMetadata, type PartitionInfo, type TopicInfo } from './metadata.js';
export {
  createTopics,
  deleteTopics,
  createPartitions,
  describeCluster,
  type AdminResult,
  type CreatedTopic,
  type NewTopic,
  type ClusterDescription,
} from './admin.js';
export {
  describeConfigs,
  alterConfigs,
  ConfigOp,
  ResourceType,
  type ConfigChange,
  type ConfigEntry,
  type ResourceConfigs,
} from './configs.js';
export {
  listGroups,
  describeGroup,
  fetchOffsets,
  commitOffsets,
  deleteGroups,
  type ListedGroup,
  type GroupDescription,
  type GroupMember as GroupMemberInfo,
  type CommittedOffset,
} from './groups.js';
export { listOffsets, OffsetTime, tpKey, type OffsetQuery, type OffsetResult, type TopicPartition } from './offsets.js';
export { Producer, type ProduceRecord, type ProducerOptions, type PartitionStats } from './producer.js';
export { fetchOnce, type FetchedRecord, type PartitionFetch } from './fetcher.js';
export { consume, resolveStart, type StartSpec, type ConsumeOptions, type ConsumeSummary } from './consumer.js';
export { GroupMember, rangeAssign, roundRobinAssign } from './member.js';
export { murmur2, partitionForKey } from './murmur2.js';
