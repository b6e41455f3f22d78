/**
 * The share coordinator's admin-side state APIs (KIP-932, Kafka 4.2's API keys 83 and 87) over a raw
 * connection to an in-process broker, and their error paths at the coordinator itself:
 * - ApiVersions lists InitializeShareGroupState and ReadShareGroupStateSummary (v0);
 * - ReadShareGroupStateSummary answers start offset -1 and state epoch 0 for a share partition never
 *   written, NOT_COORDINATOR before `__share_group_state` exists, INVALID_REQUEST for a bad partition,
 *   FENCED_LEADER_EPOCH for a leader epoch below the one a leader read with (and fences nothing itself);
 * - InitializeShareGroupState sets the start offset and state epoch (the in-flight records go),
 *   FENCED_STATE_EPOCH below the stored state epoch, INVALID_REQUEST for a bad partition, group or offset;
 * - a coordinator shut down answers COORDINATOR_NOT_AVAILABLE.
 */
import { expect } from 'chai';
import { rmSync } from 'node:fs';
import pino from 'pino';
import { ApiKey } from '../../../protocol/generated/api-keys.js';
import type { ApiVersionsResponse } from '../../../protocol/generated/api-versions.js';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import type { FindCoordinatorResponse } from '../../../protocol/generated/find-coordinator.js';
import type { InitializeShareGroupStateResponse } from '../../../protocol/generated/initialize-share-group-state.js';
import type { ReadShareGroupStateResponse } from '../../../protocol/generated/read-share-group-state.js';
import type { ReadShareGroupStateSummaryResponse } from '../../../protocol/generated/read-share-group-state-summary.js';
import type { WriteShareGroupStateResponse } from '../../../protocol/generated/write-share-group-state.js';
import { ShareStateCoordinator } from '../../../lib/share/state-coordinator.js';
import { startTestBroker, tempDir, type TestBroker } from '../../helpers/broker.js';
import { Cleanup } from '../../helpers/cleanup.js';
import { RawClient } from '../../helpers/raw-client.js';

const TOPIC_ID = '0123456789abcdef0123456789abcdef';
const GROUP = 'g-state';

describe('InitializeShareGroupState and ReadShareGroupStateSummary at the share coordinator', function () {
  this.timeout(60_000);
  const cleanup = new Cleanup();
  let b: TestBroker;
  let c: RawClient;

  before(async () => {
    const dataDir = cleanup.add(tempDir('gregor-share-state-admin-'), (d) => rmSync(d, { recursive: true, force: true }));
    b = cleanup.add(await startTestBroker({}, { dataDir }), (t) => t.stop());
    c = cleanup.add(await RawClient.connect(b.bootstrap), (r) => r.destroy());
  });
  after(() => cleanup.run());

  const summary = async (partition: number, leaderEpoch = -1, groupId = GROUP) =>
    (
      await c.request<ReadShareGroupStateSummaryResponse>(ApiKey.ReadShareGroupStateSummary, 0, {
        groupId,
        topics: [{ topicId: TOPIC_ID, partitions: [{ partition, leaderEpoch }] }],
      })
    ).results[0]?.partitions[0];
  const initialize = async (partition: number, stateEpoch: number, startOffset: bigint, groupId = GROUP) =>
    (
      await c.request<InitializeShareGroupStateResponse>(ApiKey.InitializeShareGroupState, 0, {
        groupId,
        topics: [{ topicId: TOPIC_ID, partitions: [{ partition, stateEpoch, startOffset }] }],
      })
    ).results[0]?.partitions[0]?.errorCode;
  const read = async (partition: number, leaderEpoch: number) =>
    (
      await c.request<ReadShareGroupStateResponse>(ApiKey.ReadShareGroupState, 0, {
        groupId: GROUP,
        topics: [{ topicId: TOPIC_ID, partitions: [{ partition, leaderEpoch }] }],
      })
    ).results[0]?.partitions[0];

  it('ApiVersions lists API keys 83 and 87 at v0', async () => {
    const res = await c.request<ApiVersionsResponse>(ApiKey.ApiVersions, 3, { clientSoftwareName: 'test', clientSoftwareVersion: '1' });
    for (const key of [ApiKey.InitializeShareGroupState, ApiKey.ReadShareGroupStateSummary])
      expect(
        res.apiKeys.find((k) => k.apiKey === key),
        `api key ${key}`,
      ).to.include({ minVersion: 0, maxVersion: 0 });
  });

  it('NOT_COORDINATOR before __share_group_state exists', async () => {
    expect(await summary(0)).to.include({ errorCode: ErrorCode.NOT_COORDINATOR, startOffset: -1n, stateEpoch: 0 });
    expect(await initialize(0, 1, 0n)).to.equal(ErrorCode.NOT_COORDINATOR);
  });

  it('a share partition never written: start offset -1, state epoch 0', async () => {
    // FindCoordinator of key type SHARE creates the state topic on first use
    await c.request<FindCoordinatorResponse>(ApiKey.FindCoordinator, 6, { keyType: 2, coordinatorKeys: [`${GROUP}:${TOPIC_ID}:0`] });
    expect(await summary(0)).to.include({ errorCode: ErrorCode.NONE, startOffset: -1n, stateEpoch: 0 });
  });

  it('InitializeShareGroupState sets start offset and state epoch, dropping the in-flight records', async () => {
    const w = await c.request<WriteShareGroupStateResponse>(ApiKey.WriteShareGroupState, 0, {
      groupId: GROUP,
      topics: [
        {
          topicId: TOPIC_ID,
          partitions: [
            {
              partition: 1,
              stateEpoch: 1,
              leaderEpoch: 0,
              startOffset: 3n,
              stateBatches: [{ firstOffset: 3n, lastOffset: 5n, deliveryState: 0, deliveryCount: 1 }],
            },
          ],
        },
      ],
    });
    expect(w.results[0]?.partitions[0]?.errorCode).to.equal(ErrorCode.NONE);
    expect(await summary(1)).to.include({ errorCode: ErrorCode.NONE, startOffset: 3n, stateEpoch: 1 });
    expect(await initialize(1, 2, 10n)).to.equal(ErrorCode.NONE);
    expect(await summary(1)).to.include({ errorCode: ErrorCode.NONE, startOffset: 10n, stateEpoch: 2 });
    const r = await read(1, -1);
    expect(r).to.include({ errorCode: ErrorCode.NONE, startOffset: 10n, stateEpoch: 2 });
    expect(r?.stateBatches).to.deep.equal([]);
    // a partition leader's write of the older state epoch is fenced now
    const old = await c.request<WriteShareGroupStateResponse>(ApiKey.WriteShareGroupState, 0, {
      groupId: GROUP,
      topics: [{ topicId: TOPIC_ID, partitions: [{ partition: 1, stateEpoch: 1, leaderEpoch: 0, startOffset: 4n, stateBatches: [] }] }],
    });
    expect(old.results[0]?.partitions[0]?.errorCode).to.equal(ErrorCode.FENCED_STATE_EPOCH);
    // start offset -1: the partition leader initialises it from share.auto.offset.reset
    expect(await initialize(2, 1, -1n)).to.equal(ErrorCode.NONE);
    expect(await summary(2)).to.include({ errorCode: ErrorCode.NONE, startOffset: -1n, stateEpoch: 1 });
  });

  it('FENCED_STATE_EPOCH below the stored state epoch; INVALID_REQUEST for a bad partition, group or start offset', async () => {
    expect(await initialize(3, 5, 1n)).to.equal(ErrorCode.NONE);
    expect(await initialize(3, 4, 2n)).to.equal(ErrorCode.FENCED_STATE_EPOCH);
    expect(await summary(3)).to.include({ startOffset: 1n, stateEpoch: 5 });
    expect(await initialize(3, 5, 2n)).to.equal(ErrorCode.NONE); // the same epoch again: replaced
    expect(await initialize(-1, 1, 0n)).to.equal(ErrorCode.INVALID_REQUEST);
    expect(await initialize(0, 1, -2n)).to.equal(ErrorCode.INVALID_REQUEST);
    expect(await initialize(0, 1, 0n, '')).to.equal(ErrorCode.INVALID_REQUEST);
    expect((await summary(-1))?.errorCode).to.equal(ErrorCode.INVALID_REQUEST);
    expect((await summary(0, -1, ''))?.errorCode).to.equal(ErrorCode.INVALID_REQUEST);
  });

  it('FENCED_LEADER_EPOCH for a summary below the leader epoch a leader read with; the summary fences nothing', async () => {
    expect(await initialize(4, 1, 0n)).to.equal(ErrorCode.NONE);
    expect((await read(4, 5))?.errorCode).to.equal(ErrorCode.NONE);
    expect((await summary(4, 3))?.errorCode).to.equal(ErrorCode.FENCED_LEADER_EPOCH);
    expect((await summary(4, 9))?.errorCode).to.equal(ErrorCode.NONE);
    expect((await read(4, 6))?.errorCode, 'a summary with epoch 9 did not raise the leader epoch').to.equal(ErrorCode.NONE);
    expect((await summary(4, -1))?.errorCode).to.equal(ErrorCode.NONE);
  });

  it('a coordinator shut down (or leading no state partition) answers COORDINATOR_NOT_AVAILABLE (NOT_COORDINATOR)', async () => {
    const coordinator = new ShareStateCoordinator({
      logger: pino({ level: 'silent' }),
      numPartitions: 1,
      updatesPerSnapshot: 10,
      createTopic: () => Promise.resolve(),
      topicExists: () => false,
      log: () => undefined,
      leaderEpoch: () => 0,
      notifyAppend: () => undefined,
    });
    expect(coordinator.readSummary(GROUP, TOPIC_ID, 0).errorCode).to.equal(ErrorCode.NOT_COORDINATOR);
    expect(await coordinator.initialize(GROUP, TOPIC_ID, 0, 1, 0n)).to.equal(ErrorCode.NOT_COORDINATOR);
    coordinator.shutdown();
    expect(coordinator.readSummary(GROUP, TOPIC_ID, 0).errorCode).to.equal(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    expect(await coordinator.initialize(GROUP, TOPIC_ID, 0, 1, 0n)).to.equal(ErrorCode.COORDINATOR_NOT_AVAILABLE);
  });
});
