/**
 * Share-group state survives a kill -9 of the broker (`__share_group_state`): records a librdkafka
 * 2.15 share consumer accepted (and whose acknowledgements the broker answered) are never delivered
 * again after the restart, and records that were acquired when the broker died are redelivered with
 * their delivery count carried over; the state topic's records older than the latest snapshots are
 * pruned. The group's membership comes back from `__consumer_offsets` (ShareGroupDescribe shows the
 * same member ids, member epochs and group epoch), and a member that does not come back expires after
 * its session timeout. Fails (never skips) when librdkafka is not built.
 */
import { expect } from 'chai';
import { createRequire } from 'node:module';
import { rmSync } from 'node:fs';
import { startChildBroker, tempDir } from '../helpers/broker.js';
import { Cleanup } from '../helpers/cleanup.js';
import { until } from '../helpers/eos.js';
import { librdkafkaMissing, ShareConsumer } from '../helpers/share-consumer.js';
import { RawClient } from '../helpers/raw-client.js';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { ShareGroupDescribeResponse } from '../../protocol/generated/share-group-describe.js';

const require = createRequire(import.meta.url);
const { Kafka, logLevel } = require('kafkajs') as typeof import('kafkajs');

const OVERRIDES = {
  'group.share.min.record.lock.duration.ms': '1000',
  'group.share.record.lock.duration.ms': '30000',
  'share.coordinator.state.topic.num.partitions': '3',
  // a ShareSnapshot every 2 ShareUpdate records: the restart replays a later snapshot and the updates after it
  'share.coordinator.snapshot.update.records.per.snapshot': '2',
  // a member gone with the broker expires soon after the restart (librdkafka heartbeats every 5 s)
  'group.share.min.session.timeout.ms': '1000',
  'group.share.session.timeout.ms': '10000',
};

async function describeGroup(bootstrap: string, groupId: string) {
  const raw = await RawClient.connect(bootstrap);
  try {
    const d = await raw.request<ShareGroupDescribeResponse>(ApiKey.ShareGroupDescribe, 1, {
      groupIds: [groupId],
      includeAuthorizedOperations: false,
    });
    const g = d.groups[0];
    if (g === undefined) throw new Error('no group described');
    return g;
  } finally {
    raw.destroy();
  }
}

describe('share groups across a broker kill -9', function () {
  this.timeout(120_000);
  const cleanup = new Cleanup();
  after(() => cleanup.run());

  it('accepted records are not delivered again; in-flight ones are redelivered with their delivery count', async () => {
    const missing = librdkafkaMissing();
    if (missing !== null) throw new Error(missing);
    const dataDir = tempDir();
    cleanup.defer(() => rmSync(dataDir, { recursive: true, force: true }));
    const first = await startChildBroker(dataDir, 0, OVERRIDES);
    cleanup.defer(() => first.child.kill('SIGKILL'));
    const kafka = (bootstrap: string) =>
      new Kafka({ brokers: [bootstrap], clientId: 'share-restart', logLevel: logLevel.NOTHING, retry: { retries: 10 } });
    const admin = kafka(first.bootstrap).admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: 'jobs', numPartitions: 1 }] });
    await admin.disconnect();
    const produce = async (bootstrap: string, values: string[]) => {
      const p = kafka(bootstrap).producer();
      await p.connect();
      await p.send({ topic: 'jobs', messages: values.map((value) => ({ value })) });
      await p.disconnect();
    };

    const a = new ShareConsumer(first.bootstrap, 'g-restart', 'jobs');
    cleanup.defer(() => a.kill());
    await until(() => a.deliveries.length === 0 && a.log.some((l) => l.includes('Preview')), 20_000, 'consumer a started');
    // a has joined once it gets records produced after it joined (share groups start at the log end)
    await until(
      async () => {
        await produce(first.bootstrap, ['probe']);
        await new Promise((r) => setTimeout(r, 300));
        return a.deliveries.length > 0;
      },
      30_000,
      'consumer a receiving',
    );
    await produce(
      first.bootstrap,
      Array.from({ length: 2000 }, (_, i) => `v${i}`),
    );
    const probes = a.deliveries.length;
    await until(
      () => a.deliveries.length >= probes + 2000,
      60_000,
      () => `2000 records at a (${a.deliveries.length - probes})`,
    );
    await a.close(); // sends the last acknowledgements and waits for their answers
    const accepted = new Set(a.deliveries.filter((d) => d.ack === 'A').map((d) => d.offset));
    expect(accepted.size).to.equal(Math.max(...accepted) - Math.min(...accepted) + 1); // no gaps, none twice
    expect(accepted.size).to.be.at.least(2000);
    // snapshots let the records before them go: the state partition's log start moved
    const stateAdmin = kafka(first.bootstrap).admin();
    await stateAdmin.connect();
    const stateOffsets = await stateAdmin.fetchTopicOffsets('__share_group_state');
    await stateAdmin.disconnect();
    expect(
      stateOffsets.some((o) => Number(o.low) > 0),
      JSON.stringify(stateOffsets),
    ).to.equal(true);

    const h = new ShareConsumer(first.bootstrap, 'g-restart', 'jobs');
    cleanup.defer(() => h.kill());
    await until(
      async () => {
        if (h.deliveries.length === 0) await produce(first.bootstrap, ['hold-a', 'b', 'c']);
        await new Promise((r) => setTimeout(r, 500));
        return h.deliveries.length > 0;
      },
      30_000,
      'consumer h holding records',
    );
    const held = h.deliveries.filter((d) => d.ack === 'H').map((d) => d.offset);
    expect(held.length).to.be.greaterThan(0);
    const described = await describeGroup(first.bootstrap, 'g-restart');
    expect(described.members).to.have.length(1); // h (a left)
    first.child.kill('SIGKILL');
    await first.exited;
    await h.kill();

    const second = await startChildBroker(dataDir, first.port, OVERRIDES);
    cleanup.defer(() => second.child.kill('SIGKILL'));
    // the membership was replayed: the same member, member epoch and group epoch
    const replayed = await describeGroup(second.bootstrap, 'g-restart');
    expect(replayed.errorCode).to.equal(ErrorCode.NONE);
    expect(replayed.groupEpoch).to.equal(described.groupEpoch);
    expect(replayed.members.map((m) => [m.memberId, m.memberEpoch])).to.deep.equal(
      described.members.map((m) => [m.memberId, m.memberEpoch]),
    );
    const c = new ShareConsumer(second.bootstrap, 'g-restart', 'jobs');
    cleanup.defer(() => c.kill());
    await until(
      () => held.every((o) => c.deliveries.some((d) => d.offset === o)),
      60_000,
      () => `redelivery of ${held.join(',')}: ${JSON.stringify(c.deliveries)}`,
    );
    await produce(second.bootstrap, ['after-1', 'after-2']);
    await until(
      () => c.deliveries.filter((d) => d.offset >= Math.max(...held) + 1).length >= 2,
      30_000,
      'records produced after the restart',
    );
    await c.close();
    for (const d of c.deliveries) expect(accepted.has(d.offset), `offset ${d.offset} was accepted before the kill`).to.equal(false);
    for (const o of held) expect(c.deliveries.find((d) => d.offset === o)?.deliveryCount).to.equal(2);
    // h never came back: its session timed out after the restart, as in Kafka; the group stays, empty
    await until(async () => (await describeGroup(second.bootstrap, 'g-restart')).members.length === 0, 30_000, 'members expired');
    const empty = await describeGroup(second.bootstrap, 'g-restart');
    expect(empty.groupState).to.equal('Empty');
    expect(empty.groupEpoch).to.be.greaterThan(described.groupEpoch);
    second.child.kill('SIGTERM');
    await second.exited;
  });
});
