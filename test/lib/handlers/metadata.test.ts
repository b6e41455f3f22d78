import { expect } from 'chai';
import { ApiKey } from '../../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import type { MetadataResponse } from '../../../protocol/generated/metadata.js';
import { startTestBroker, type TestBroker } from '../../helpers/broker.js';
import { RawClient } from '../../helpers/raw-client.js';
import { Cleanup } from '../../helpers/cleanup.js';

const ZERO = '0'.repeat(32);

describe('Metadata', () => {
  let b: TestBroker;
  const cleanup = new Cleanup();
  before(async () => {
    b = cleanup.add(
      await startTestBroker({ 'num.partitions': 2, 'advertised.listeners': 'PLAINTEXT://gregor.invalid:0', 'broker.rack': 'r1' }),
      (t) => t.stop(),
    );
  });
  after(() => cleanup.run());

  it('returns the advertised listener (port 0 resolves to the bound port), rack, cluster id and controller', async () => {
    const c = await RawClient.connect(`127.0.0.1:${b.broker.port}`);
    const res = await c.request<MetadataResponse>(ApiKey.Metadata, 12, {
      topics: [],
      allowAutoTopicCreation: false,
      includeTopicAuthorizedOperations: false,
    });
    c.destroy();
    expect(res.brokers).to.deep.equal([{ nodeId: 0, host: 'gregor.invalid', port: b.broker.port, rack: 'r1' }]);
    expect(res.controllerId).to.equal(0);
    expect(res.clusterId).to.match(/^[A-Za-z0-9_-]{22}$/);
    expect(res.topics).to.deep.equal([]);
  });

  it('auto-creates a requested topic with stable non-zero topic ids (v10+), and honours allowAutoTopicCreation=false', async () => {
    const c = await RawClient.connect(`127.0.0.1:${b.broker.port}`);
    const first = await c.request<MetadataResponse>(ApiKey.Metadata, 12, {
      topics: [{ topicId: ZERO, name: 'auto-md' }],
      allowAutoTopicCreation: true,
      includeTopicAuthorizedOperations: false,
    });
    const t = first.topics[0];
    expect(t?.errorCode).to.equal(ErrorCode.NONE);
    expect(t?.partitions.map((p) => [p.partitionIndex, p.leaderId, p.leaderEpoch, p.replicaNodes, p.isrNodes])).to.deep.equal([
      [0, 0, 0, [0], [0]],
      [1, 0, 0, [0], [0]],
    ]);
    expect(t?.topicId)
      .to.match(/^[0-9a-f]{32}$/)
      .and.not.equal(ZERO);
    const again = await c.request<MetadataResponse>(ApiKey.Metadata, 10, {
      topics: [{ topicId: ZERO, name: 'auto-md' }],
      allowAutoTopicCreation: true,
      includeTopicAuthorizedOperations: false,
    });
    expect(again.topics[0]?.topicId).to.equal(t?.topicId);
    // By id (v12: null name).
    const byId = await c.request<MetadataResponse>(ApiKey.Metadata, 12, {
      topics: [{ topicId: t?.topicId ?? ZERO, name: null }],
      allowAutoTopicCreation: false,
      includeTopicAuthorizedOperations: false,
    });
    expect(byId.topics[0]?.name).to.equal('auto-md');
    const unknownId = await c.request<MetadataResponse>(ApiKey.Metadata, 12, {
      topics: [{ topicId: 'ab'.repeat(16), name: null }],
      allowAutoTopicCreation: false,
      includeTopicAuthorizedOperations: false,
    });
    expect(unknownId.topics[0]?.errorCode).to.equal(ErrorCode.UNKNOWN_TOPIC_ID);
    const noAuto = await c.request<MetadataResponse>(ApiKey.Metadata, 12, {
      topics: [{ topicId: ZERO, name: 'not-created' }],
      allowAutoTopicCreation: false,
      includeTopicAuthorizedOperations: false,
    });
    expect(noAuto.topics[0]?.errorCode).to.equal(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
    const bad = await c.request<MetadataResponse>(ApiKey.Metadata, 12, {
      topics: [{ topicId: ZERO, name: 'bad name!' }],
      allowAutoTopicCreation: true,
      includeTopicAuthorizedOperations: false,
    });
    expect(bad.topics[0]?.errorCode).to.equal(ErrorCode.INVALID_TOPIC_EXCEPTION);
    // v0: an empty list means all topics; v1+: null means all topics.
    const v0 = await c.request<MetadataResponse>(ApiKey.Metadata, 0, { topics: [] });
    expect(v0.topics.map((x) => x.name)).to.include('auto-md');
    const v1 = await c.request<MetadataResponse>(ApiKey.Metadata, 1, { topics: null });
    expect(v1.topics.map((x) => x.name)).to.include('auto-md');
    c.destroy();
  });
});
