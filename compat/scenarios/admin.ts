/** Admin APIs through each client: topics, partitions, configs, records. */
import { rawCreateTopic, rawListOffset, rawProduce } from '../lib/raw.js';
import { eventually, partitionCount, type Scenario } from './context.js';

const topics: Scenario = {
  id: 'admin-topics',
  title: 'admin: create/delete topics',
  description: 'creates a 3-partition topic, checks it with Metadata, deletes it, checks it is gone',
  ops: ['createTopic', 'deleteTopic'],
  async run(ctx, client) {
    const topic = ctx.topic('adm');
    await client.ops.createTopic!(ctx.main.bootstrap, topic, 3);
    await eventually(
      `created topic ${topic} does not show 3 partitions`,
      async () => (await partitionCount(ctx.main.bootstrap, topic)) === 3,
    );
    await client.ops.deleteTopic!(ctx.main.bootstrap, topic);
    await eventually(`deleted topic ${topic} still exists`, async () => (await partitionCount(ctx.main.bootstrap, topic)) === -1);
    return 'created with 3 partitions, then deleted';
  },
};

const partitions: Scenario = {
  id: 'admin-partitions',
  title: 'admin: add partitions',
  description: 'grows a 1-partition topic to 3 partitions (CreatePartitions) and checks Metadata',
  ops: ['createPartitions'],
  async run(ctx, client) {
    const topic = ctx.topic('grow');
    await rawCreateTopic(ctx.main.bootstrap, topic, 1);
    await client.ops.createPartitions!(ctx.main.bootstrap, topic, 3);
    await eventually(`topic ${topic} did not grow to 3 partitions`, async () => (await partitionCount(ctx.main.bootstrap, topic)) === 3);
    return '1 → 3 partitions';
  },
};

const configs: Scenario = {
  id: 'admin-configs',
  title: 'admin: describe/alter configs',
  description:
    'describes retention.ms and cleanup.policy of a new topic (Kafka defaults), sets retention.ms=3600000 (AlterConfigs), describes it again',
  ops: ['describeConfigs', 'alterConfigs'],
  async run(ctx, client) {
    const topic = ctx.topic('cfg');
    await rawCreateTopic(ctx.main.bootstrap, topic, 1);
    const before = await client.ops.describeConfigs!(ctx.main.bootstrap, topic, ['retention.ms', 'cleanup.policy']);
    if (before['retention.ms'] !== '604800000' || before['cleanup.policy'] !== 'delete')
      throw new Error(`described ${JSON.stringify(before)}, expected retention.ms=604800000 cleanup.policy=delete`);
    await client.ops.alterConfigs!(ctx.main.bootstrap, topic, { 'retention.ms': '3600000' });
    const after = await client.ops.describeConfigs!(ctx.main.bootstrap, topic, ['retention.ms']);
    if (after['retention.ms'] !== '3600000') throw new Error(`after AlterConfigs retention.ms=${after['retention.ms']}, expected 3600000`);
    return 'defaults described; retention.ms altered and read back';
  },
};

const deleteRecords: Scenario = {
  id: 'admin-delete-records',
  title: 'admin: delete records',
  description: 'deletes the first 4 of 10 records (DeleteRecords); the returned and listed low watermark must be 4',
  ops: ['deleteRecords'],
  async run(ctx, client) {
    const topic = ctx.topic('delrec');
    await rawCreateTopic(ctx.main.bootstrap, topic, 1);
    await rawProduce(
      ctx.main.bootstrap,
      topic,
      Array.from({ length: 10 }, (_, i) => ({ partition: 0, key: null, value: `v${i}`, timestamp: Date.now() })),
    );
    const low = await client.ops.deleteRecords!(ctx.main.bootstrap, topic, 0, 4);
    const listed = await rawListOffset(ctx.main.bootstrap, topic, 0, -2);
    if (low !== 4 || listed !== 4) throw new Error(`low watermark returned ${low}, listed ${listed}; expected 4`);
    return 'low watermark 4 (returned and listed)';
  },
};

export const adminScenarios: Scenario[] = [topics, partitions, configs, deleteRecords];
