/** The handler registry: drives both dispatch and what ApiVersions advertises. */
import { ConfigError } from '../config.js';
import type { ApiVersionRange } from '../services.js';
import { EMULATED_RELEASES, emulatedMaxVersions } from '../version-emulation.js';
import { apiVersionsHandler } from './api-versions.js';
import { fetchHandler } from './fetch.js';
import { listOffsetsHandler } from './list-offsets.js';
import { metadataHandler } from './metadata.js';
import { offsetForLeaderEpochHandler } from './offset-for-leader-epoch.js';
import { produceHandler } from './produce.js';
import { alterConfigsHandler } from './alter-configs.js';
import { createPartitionsHandler } from './create-partitions.js';
import { createTopicsHandler } from './create-topics.js';
import { deleteRecordsHandler } from './delete-records.js';
import { deleteTopicsHandler } from './delete-topics.js';
import { describeClusterHandler } from './describe-cluster.js';
import { describeConfigsHandler } from './describe-configs.js';
import { incrementalAlterConfigsHandler } from './incremental-alter-configs.js';
import { consumerGroupDescribeHandler } from './consumer-group-describe.js';
import { consumerGroupHeartbeatHandler } from './consumer-group-heartbeat.js';
import { deleteGroupsHandler } from './delete-groups.js';
import { describeGroupsHandler } from './describe-groups.js';
import { findCoordinatorHandler } from './find-coordinator.js';
import { heartbeatHandler } from './heartbeat.js';
import { joinGroupHandler } from './join-group.js';
import { leaveGroupHandler } from './leave-group.js';
import { listGroupsHandler } from './list-groups.js';
import { offsetCommitHandler } from './offset-commit.js';
import { offsetDeleteHandler } from './offset-delete.js';
import { offsetFetchHandler } from './offset-fetch.js';
import { syncGroupHandler } from './sync-group.js';
import { addOffsetsToTxnHandler } from './add-offsets-to-txn.js';
import { addPartitionsToTxnHandler } from './add-partitions-to-txn.js';
import { endTxnHandler } from './end-txn.js';
import { initProducerIdHandler } from './init-producer-id.js';
import { txnOffsetCommitHandler } from './txn-offset-commit.js';
import { writeTxnMarkersHandler } from './write-txn-markers.js';
import { describeProducersHandler } from './describe-producers.js';
import { describeTransactionsHandler } from './describe-transactions.js';
import { listTransactionsHandler } from './list-transactions.js';
import { electLeadersHandler } from './elect-leaders.js';
import { alterPartitionReassignmentsHandler } from './alter-partition-reassignments.js';
import { listPartitionReassignmentsHandler } from './list-partition-reassignments.js';
import { describeLogDirsHandler } from './describe-log-dirs.js';
import { saslHandshakeHandler } from './sasl-handshake.js';
import { saslAuthenticateHandler } from './sasl-authenticate.js';
import { describeUserScramCredentialsHandler } from './describe-user-scram-credentials.js';
import { alterUserScramCredentialsHandler } from './alter-user-scram-credentials.js';
import { shareAcknowledgeHandler } from './share-acknowledge.js';
import { shareFetchHandler } from './share-fetch.js';
import { shareGroupDescribeHandler } from './share-group-describe.js';
import { shareGroupHeartbeatHandler } from './share-group-heartbeat.js';
import { describeShareGroupOffsetsHandler } from './describe-share-group-offsets.js';
import { alterShareGroupOffsetsHandler } from './alter-share-group-offsets.js';
import { deleteShareGroupOffsetsHandler } from './delete-share-group-offsets.js';
import {
  deleteShareGroupStateHandler,
  initializeShareGroupStateHandler,
  readShareGroupStateHandler,
  readShareGroupStateSummaryHandler,
  writeShareGroupStateHandler,
} from './share-group-state.js';
import { describeClientQuotasHandler } from './describe-client-quotas.js';
import { alterClientQuotasHandler } from './alter-client-quotas.js';
import { createAclsHandler } from './create-acls.js';
import { deleteAclsHandler } from './delete-acls.js';
import { describeAclsHandler } from './describe-acls.js';
import type { Handler } from './types.js';

export const HANDLERS: readonly Handler[] = [
  produceHandler,
  fetchHandler,
  listOffsetsHandler,
  metadataHandler,
  offsetForLeaderEpochHandler,
  apiVersionsHandler,
  findCoordinatorHandler,
  joinGroupHandler,
  syncGroupHandler,
  heartbeatHandler,
  leaveGroupHandler,
  offsetCommitHandler,
  offsetFetchHandler,
  describeGroupsHandler,
  listGroupsHandler,
  deleteGroupsHandler,
  offsetDeleteHandler,
  consumerGroupHeartbeatHandler,
  consumerGroupDescribeHandler,
  initProducerIdHandler,
  addPartitionsToTxnHandler,
  addOffsetsToTxnHandler,
  endTxnHandler,
  writeTxnMarkersHandler,
  txnOffsetCommitHandler,
  describeProducersHandler,
  describeTransactionsHandler,
  listTransactionsHandler,
  createTopicsHandler,
  deleteTopicsHandler,
  deleteRecordsHandler,
  describeConfigsHandler,
  alterConfigsHandler,
  createPartitionsHandler,
  incrementalAlterConfigsHandler,
  describeClusterHandler,
  electLeadersHandler,
  alterPartitionReassignmentsHandler,
  listPartitionReassignmentsHandler,
  describeLogDirsHandler,
  saslHandshakeHandler,
  saslAuthenticateHandler,
  describeUserScramCredentialsHandler,
  alterUserScramCredentialsHandler,
  shareGroupHeartbeatHandler,
  describeClientQuotasHandler,
  alterClientQuotasHandler,
  shareGroupDescribeHandler,
  shareFetchHandler,
  shareAcknowledgeHandler,
  describeShareGroupOffsetsHandler,
  alterShareGroupOffsetsHandler,
  deleteShareGroupOffsetsHandler,
  readShareGroupStateHandler,
  writeShareGroupStateHandler,
  deleteShareGroupStateHandler,
  initializeShareGroupStateHandler,
  readShareGroupStateSummaryHandler,
  describeAclsHandler,
  createAclsHandler,
  deleteAclsHandler,
];

/** The ranges to advertise: every handler's, or those an emulated Kafka release had. */
export function advertisedVersions(handlers: readonly Handler[], emulate: string | null): ApiVersionRange[] {
  const all = handlers
    .map((h) => ({ apiKey: h.apiKey, minVersion: h.minVersion, maxVersion: h.maxVersion }))
    .sort((a, b) => a.apiKey - b.apiKey);
  if (emulate === null || emulate === '' || emulate === 'latest' || /^3\.9(\.|$)/.test(emulate)) return all;
  const maxes = emulatedMaxVersions(emulate);
  if (maxes === undefined) {
    throw new ConfigError(`broker.version.emulate=${emulate}: unknown release (known: ${EMULATED_RELEASES.join(', ')}, 3.9)`);
  }
  const out: ApiVersionRange[] = [];
  for (const a of all) {
    const max = maxes.get(a.apiKey);
    if (max === undefined) continue;
    const hi = Math.min(max, a.maxVersion);
    if (hi >= a.minVersion) out.push({ apiKey: a.apiKey, minVersion: a.minVersion, maxVersion: hi });
  }
  return out;
}
