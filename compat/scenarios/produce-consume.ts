/** Bootstrap/metadata, produce and read back (keys, headers, timestamps), every codec, every acks, offsets by time. */
import { rawCreateTopic, rawProduce } from '../lib/raw.js';
import { checkReadBack, makeRecords, readBackSpec } from '../lib/records.js';
import { type Acks, type Client, type Codec, CODECS, NotSupportedError } from '../lib/types.js';
import { CODEC_ID, replicaNote, type Scenario, type ScenarioContext, storedEntries } from './context.js';

const metadata: Scenario = {
  id: 'metadata',
  title: 'bootstrap + metadata',
  description:
    'connects, then reads cluster and topic metadata: the broker list (in a cluster the suite started: every broker) and a 3-partition topic with a leader per partition',
  ops: ['metadata'],
  smoke: true,
  async run(ctx, client) {
    const topic = ctx.topic('md');
    await rawCreateTopic(ctx.main.bootstrap, topic, 3);
    const md = await client.ops.metadata!(ctx.main.bootstrap, [topic]);
    const t = md.topics.find((x) => x.name === topic);
    if (t === undefined) throw new Error(`topic ${topic} missing from metadata (got ${md.topics.map((x) => x.name).join(', ') || 'none'})`);
    const parts = t.partitions.map((p) => p.partition).sort();
    if (parts.join() !== '0,1,2') throw new Error(`partitions ${parts.join()} , expected 0,1,2`);
    if (md.brokers.length === 0) throw new Error('no brokers in metadata');
    const ids = new Set(md.brokers.map((b) => b.nodeId));
    const nodes = ctx.main.nodes?.map((n) => n.nodeId).sort((a, b) => a - b);
    if (nodes !== undefined && [...ids].sort((a, b) => a - b).join() !== nodes.join())
      throw new Error(`metadata lists broker(s) ${[...ids].join(', ')}, the cluster has ${nodes.join(', ')}`);
    const bad = t.partitions.filter((p) => !ids.has(p.leader));
    if (bad.length > 0) throw new Error(`partition(s) ${bad.map((p) => p.partition).join()} led by unknown broker ${bad[0]?.leader}`);
    return `${md.brokers.length} broker(s) (${md.brokers.map((b) => `${b.nodeId}@${b.host}:${b.port}`).join(', ')}), 3 partitions with leaders`;
  },
};

/** Produces `records` with the client, reads them back with the same client, and checks them. */
export async function roundTrip(
  ctx: ScenarioContext,
  client: Client,
  topic: string,
  partitions: number,
  codec: Codec,
  acks: Acks,
  perPartition = 6,
): Promise<string> {
  await rawCreateTopic(ctx.main.bootstrap, topic, partitions);
  const records = makeRecords(topic, partitions, perPartition);
  const started = Date.now();
  await client.ops.produce!(ctx.main.bootstrap, { topic, records, codec, acks });
  const got = await client.ops.consume!(ctx.main.bootstrap, readBackSpec(topic, records));
  return checkReadBack(records, got, client.caps, started);
}

const produceConsume: Scenario = {
  id: 'produce-consume',
  title: 'produce + consume by assignment',
  description:
    '18 records on 3 partitions (keys incl. a null key, headers, CreateTime timestamps), acks=all, no compression; read back by partition assignment and compared field by field',
  ops: ['produce', 'consume'],
  smoke: true,
  run: (ctx, client) => roundTrip(ctx, client, ctx.topic('pc'), 3, 'none', -1),
};

function codecScenario(codec: Exclude<Codec, 'none'>): Scenario {
  return {
    id: `codec-${codec}`,
    title: `compression ${codec}`,
    description: `16 records on 2 partitions produced with ${codec} (acks=1), read back and compared; the stored batches must carry the ${codec} codec`,
    ops: ['produce', 'consume'],
    async run(ctx, client) {
      if (!client.caps.codecs.includes(codec))
        throw new NotSupportedError(client.unsupported[codec] ?? `${client.title} cannot produce ${codec}`);
      const topic = ctx.topic(codec);
      const detail = await roundTrip(ctx, client, topic, 2, codec, 1, 8);
      const stored = await storedEntries(ctx.main, topic, 0);
      const codecs = [...new Set(stored.map((e) => e.compression))];
      if (codecs.length !== 1 || codecs[0] !== CODEC_ID[codec])
        throw new Error(`stored entries carry codec id(s) ${codecs.join(',')}, expected ${CODEC_ID[codec]} (${codec})`);
      return `${detail}; stored as ${stored.length} ${codec} batch(es)${replicaNote(stored)}`;
    },
  };
}

function acksScenario(acks: Acks): Scenario {
  const name = acks === -1 ? 'all' : String(acks);
  return {
    id: `acks-${name}`,
    title: `acks=${name}`,
    description: `12 records on 2 partitions with acks=${name}${acks === 0 ? ' (the broker sends no response)' : ''}, read back and compared`,
    ops: ['produce', 'consume'],
    run: (ctx, client) => roundTrip(ctx, client, ctx.topic(`acks${name}`), 2, 'none', acks),
  };
}

const offsetsByTime: Scenario = {
  id: 'offsets-by-time',
  title: 'ListOffsets by timestamp',
  description:
    '10 records with timestamps T, T+1s, … T+9s (written by the suite); the client asks for the offset at T+2.5s (expects 3) and at T-10s (expects 0)',
  ops: ['offsetForTime'],
  async run(ctx, client) {
    const topic = ctx.topic('ts');
    await rawCreateTopic(ctx.main.bootstrap, topic, 1);
    const base = Date.now() - 3_600_000;
    await rawProduce(
      ctx.main.bootstrap,
      topic,
      Array.from({ length: 10 }, (_, i) => ({ partition: 0, key: null, value: `v${i}`, timestamp: base + i * 1000 })),
    );
    const mid = await client.ops.offsetForTime!(ctx.main.bootstrap, topic, 0, base + 2500);
    const early = await client.ops.offsetForTime!(ctx.main.bootstrap, topic, 0, base - 10000);
    if (mid !== 3 || early !== 0) throw new Error(`offset at T+2.5s = ${mid} (expected 3), at T-10s = ${early} (expected 0)`);
    return 'offset 3 at T+2.5s, 0 before the first record';
  },
};

export const produceConsumeScenarios: Scenario[] = [
  metadata,
  produceConsume,
  ...CODECS.filter((c): c is Exclude<Codec, 'none'> => c !== 'none').map(codecScenario),
  ...([0, 1, -1] as const).map(acksScenario),
  offsetsByTime,
];
