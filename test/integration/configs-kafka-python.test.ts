/**
 * kafka-python 2.0.2 alters and describes a dynamic broker config (AlterConfigs and DescribeConfigs
 * on this broker's id); a restart keeps it, with source DYNAMIC_BROKER_CONFIG.
 */
import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { kafkaPythonBrokerConfigs } from '../helpers/kafka-python.js';
import { startTestBroker, tempDir, type TestBroker } from '../helpers/broker.js';

describe('kafka-python: dynamic broker configs', function () {
  this.timeout(90_000);
  const dataDir = tempDir();
  let b: TestBroker;
  after(async () => {
    await b.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('alters log.cleaner.threads and message.max.bytes on broker 0, describes them, and a restart keeps them', async () => {
    b = await startTestBroker({}, { dataDir });
    const keys = ['log.cleaner.threads', 'message.max.bytes', 'num.partitions', 'ssl.key.password'];
    const before = await kafkaPythonBrokerConfigs({ bootstrap: b.bootstrap, broker: '0', alter: null, describe: keys });
    expect(before.describe['log.cleaner.threads']).to.deep.equal(['1', 5, false, false]);
    expect(before.describe['num.partitions']).to.deep.equal(['1', 5, true, false]);
    expect(before.describe['ssl.key.password']).to.deep.equal([null, 5, false, true]);
    const altered = await kafkaPythonBrokerConfigs({
      bootstrap: b.bootstrap,
      broker: '0',
      alter: { 'log.cleaner.threads': '2', 'message.max.bytes': '2097152' },
      describe: keys,
    });
    expect(altered.alter?.[0]).to.equal(0);
    expect(altered.describe['log.cleaner.threads']).to.deep.equal(['2', 2, false, false]);
    expect(altered.describe['message.max.bytes']).to.deep.equal(['2097152', 2, false, false]);
    // the running broker reads the new value at once
    expect(b.broker.config.int('message.max.bytes')).to.equal(2097152);
    // log.cleaner.threads, a key the log cleaner reads, typed from Kafka's catalogue
    expect(b.broker.config.int('log.cleaner.threads')).to.equal(2);
    const refused = await kafkaPythonBrokerConfigs({ bootstrap: b.bootstrap, broker: '0', alter: { 'num.partitions': '4' }, describe: [] });
    expect(refused.alter?.[0]).to.equal(42); // INVALID_REQUEST
    expect(refused.alter?.[1]).to.match(/Cannot update these configs dynamically: Set\(num.partitions\)/);

    await b.stop();
    b = await startTestBroker({}, { dataDir });
    const after = await kafkaPythonBrokerConfigs({ bootstrap: b.bootstrap, broker: '0', alter: null, describe: keys });
    // the refused AlterConfigs replaced nothing: both values survive the restart
    expect(after.describe['log.cleaner.threads']).to.deep.equal(['2', 2, false, false]);
    expect(after.describe['message.max.bytes']).to.deep.equal(['2097152', 2, false, false]);
  });
});
