/**
 * Produce v2 / message format 1. kafka-python with api_version=(0,10,0) speaks it to any broker; every
 * other client is pointed at a gregor started with broker.version.emulate=0.10.0, which advertises only
 * Kafka 0.10.0's API ranges, so clients fall back to Produce v2 and magic 1 on their own.
 */
import { rawCreateTopic, rawRequest } from '../lib/raw.js';
import { checkReadBack, makeRecords, readBackSpec } from '../lib/records.js';
import type { Client } from '../lib/types.js';
import { type BrokerTarget, eventually, NeedsGregorError, replicaNote, type Scenario, storedEntries } from './context.js';

export const legacyFormat: Scenario = {
  id: 'format-v1',
  title: 'Produce v2 / message format 1',
  description:
    'every client against a gregor with broker.version.emulate=0.10.0, where it must fall back to Produce v2 / magic 1 on its own: 10 gzip records (no headers: format 1 has none) on 2 partitions, stored as magic 1 and read back. kafka-python (0,10,0) also against the broker under test, which (like Kafka 3.x) stores them up-converted to magic 2',
  ops: ['produce', 'consume'],
  async run(ctx, client) {
    const pinned = client.id === 'kafka-python-0.10';
    // Kafka 3.x stores v0/v1 input up-converted to v2 (log.message.format.version 3.0); a 0.10.0 broker keeps magic 1.
    const targets: [BrokerTarget, number, string][] = [];
    if (pinned) targets.push([ctx.main, 2, 'broker under test, up-converted to magic 2 as Kafka 3.x does']);
    if (ctx.legacy !== undefined) targets.push([ctx.legacy, 1, 'emulate=0.10.0 broker']);
    if (!pinned && ctx.legacy === undefined) throw new NeedsGregorError('needs a gregor-managed broker with broker.version.emulate=0.10.0');
    const details: string[] = [];
    for (const [target, magic, label] of targets)
      details.push(await produceLegacy(ctx.topic('v1'), target, magic, target === ctx.main, client, label));
    return details.join('; ');
  },
};

async function produceLegacy(
  topic: string,
  target: BrokerTarget,
  magic: number,
  create: boolean,
  client: Client,
  label: string,
): Promise<string> {
  // 0.10.0 had no CreateTopics: there the topic is auto-created (num.partitions=2) by a Metadata v1 request.
  if (create) await rawCreateTopic(target.bootstrap, topic, 2);
  await eventually(`topic ${topic} was not auto-created with 2 partitions`, async () => {
    const md = await rawRequest<{ topics: { name: string; errorCode: number; partitions: { leaderId: number }[] }[] }>(
      target.bootstrap,
      3,
      1,
      { topics: [{ name: topic }] },
    );
    const t = md.topics.find((x) => x.name === topic);
    return t !== undefined && t.errorCode === 0 && t.partitions.length >= 2 && t.partitions.every((p) => p.leaderId >= 0);
  });
  const records = makeRecords(topic, 2, 5).map((r) => ({ ...r, headers: [] as [string, string][] }));
  const started = Date.now();
  await client.ops.produce!(target.bootstrap, { topic, records, codec: 'gzip', acks: 1 });
  // Read back first: with acks=1 a replicated partition's high watermark (up to which a leader serves) may lag the ack.
  const got = await client.ops.consume!(target.bootstrap, readBackSpec(topic, records));
  const detail = checkReadBack(records, got, { ...client.caps, headers: 'none' }, started);
  const log0 = await storedEntries(target, topic, 0);
  const stored = [...log0, ...(await storedEntries(target, topic, 1))];
  const magics = [...new Set(stored.map((e) => e.magic))];
  if (magics.length !== 1 || magics[0] !== magic)
    throw new Error(`${label}: stored entries have magic ${magics.join(',') || '(none)'}, expected ${magic}`);
  return `${label}: ${stored.length} magic-${magic} gzip entr${stored.length === 1 ? 'y' : 'ies'} stored${replicaNote(log0)}, ${detail}`;
}
