/**
 * Issue 14, start-up: the start bundle (dist/bundle/start.cjs) holds no per-API protocol codec; each
 * API's generated module is its own chunk (dist/bundle/protocol/<api>.cjs, scripts/bundle.mjs) that the
 * registry loads when the API is first used. Here: the bundle and its chunks are laid out so, loading
 * the bundle reads no chunk, and a `gregor start` (whose every API is loaded on first use) advertises
 * exactly the ApiVersions list it did before (test/fixtures/api-versions/default.json) and serves kafkajs,
 * librdkafka and an admin client.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import kafkajs, { Kafka, logLevel } from 'kafkajs';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { ApiVersionsResponse } from '../../protocol/generated/api-versions.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { API_CODECS } from '../../protocol/generated/index.js';
import { kebab } from '../../scripts/generate-protocol.js';
import { startChildBroker, stopChildBroker as stop, tempDir } from '../helpers/broker.js';
import { Cleanup } from '../helpers/cleanup.js';
import { PROJECT_ROOT } from '../helpers/project.js';
import { RawClient } from '../helpers/raw-client.js';
import { kafkajsRoundTrip, rdkafkaRoundTrip } from '../helpers/roundtrip.js';

const { ConfigResourceTypes } = kafkajs; // CommonJS: not a named export under ESM
const BUNDLE_DIR = join(PROJECT_ROOT, 'dist/bundle');
const CHUNK_DIR = join(BUNDLE_DIR, 'protocol');
const LOADER = join(PROJECT_ROOT, 'bin/load-broker.js');

describe('gregor start: protocol codecs are chunks loaded on first use', function () {
  this.timeout(120_000);
  const cleanup = new Cleanup();
  afterEach(() => cleanup.run());

  it('start.cjs holds no per-API codec; every API of the registry has its chunk', () => {
    const bundle = readFileSync(join(BUNDLE_DIR, 'start.cjs'), 'latin1');
    for (const name of ['Produce', 'Fetch', 'Metadata', 'ApiVersions', 'JoinGroup']) {
      expect(bundle, name).to.not.include(`function read${name}Request(`);
      expect(readFileSync(join(CHUNK_DIR, `${kebab(name)}.cjs`), 'latin1'), name).to.include(`function read${name}Request(`);
    }
    const chunks = readdirSync(CHUNK_DIR).filter((f) => f.endsWith('.cjs'));
    expect(chunks.sort()).to.deep.equal([...API_CODECS.values()].map((e) => `${kebab(e.name)}.cjs`).sort());
  });

  it('chunks take the codec modules as they are handed over, without a getter copy of each (scripts/bundle.mjs)', () => {
    const fetchChunk = readFileSync(join(CHUNK_DIR, 'fetch.cjs'), 'latin1');
    expect(fetchChunk).to.include('var W = require("../codec/writer.js");');
    for (const f of readdirSync(CHUNK_DIR).filter((x) => x.endsWith('.cjs'))) {
      expect(readFileSync(join(CHUNK_DIR, f), 'latin1'), f).to.not.match(/__toESM\(require\("\.\.\/codec\//);
    }
    // and the loader hands them over as plain objects of values (data properties, not getters)
    const bundle = readFileSync(join(BUNDLE_DIR, 'start.cjs'), 'latin1');
    expect(bundle).to.match(/"\.\.\/codec\/writer\.js": plain\(writer_exports\)/);
  });

  it('loading the start bundle reads no chunk', () => {
    const script = `const fs = require('node:fs'); const read = fs.readFileSync; const files = [];
fs.readFileSync = (f, ...a) => { files.push(String(f)); return read(f, ...a); };
require(${JSON.stringify(LOADER)}).loadBroker();
console.log(JSON.stringify(files));`;
    const r = spawnSync(process.execPath, ['-e', script], { env: { ...process.env, GREGOR_CODE_CACHE: '0' }, encoding: 'utf8' });
    expect(r.status, r.stderr).to.equal(0);
    const files = JSON.parse(r.stdout) as string[];
    expect(files).to.include(join(BUNDLE_DIR, 'start.cjs')); // the probe sees reads
    expect(files.filter((f) => f.startsWith(CHUNK_DIR))).to.deep.equal([]);
  });

  it('advertises exactly the ApiVersions list of before and serves kafkajs, librdkafka and an admin client', async () => {
    const dataDir = cleanup.add(tempDir('chunks-'), (d) => rmSync(d, { recursive: true, force: true }));
    const b = cleanup.add(await startChildBroker(dataDir), stop);

    const c = await RawClient.connect(b.bootstrap);
    const res = await c.request<ApiVersionsResponse>(ApiKey.ApiVersions, 3, {
      clientSoftwareName: 'gregor-test',
      clientSoftwareVersion: '1.0',
    });
    c.destroy();
    expect(res.errorCode).to.equal(ErrorCode.NONE);
    const expected = JSON.parse(readFileSync(join(PROJECT_ROOT, 'test/fixtures/api-versions/default.json'), 'utf8')) as number[][];
    expect(res.apiKeys.map((k) => [k.apiKey, k.minVersion, k.maxVersion])).to.deep.equal(expected);

    const kafka = new Kafka({ brokers: [b.bootstrap], logLevel: logLevel.NOTHING });
    expect(await kafkajsRoundTrip(kafka, 'chunks-kafkajs', ['a', 'b', 'c'])).to.deep.equal(['a', 'b', 'c']);
    expect(await rdkafkaRoundTrip({ 'bootstrap.servers': b.bootstrap }, 'chunks-rdkafka', 20)).to.deep.equal(
      Array.from({ length: 20 }, (_, i) => `r${i}`),
    );
    const admin = kafka.admin();
    await admin.connect();
    try {
      await admin.createTopics({ topics: [{ topic: 'chunks-admin', numPartitions: 3 }] });
      const [meta] = (await admin.fetchTopicMetadata({ topics: ['chunks-admin'] })).topics;
      expect(meta?.partitions.length).to.equal(3);
      const configs = await admin.describeConfigs({
        resources: [{ type: ConfigResourceTypes.TOPIC, name: 'chunks-admin' }],
        includeSynonyms: false,
      });
      expect(configs.resources[0]?.configEntries.find((e) => e.configName === 'cleanup.policy')?.configValue).to.equal('delete');
      await admin.deleteTopics({ topics: ['chunks-admin'] });
    } finally {
      await admin.disconnect();
    }
    expect(existsSync(join(CHUNK_DIR, 'describe-configs.cjs'))).to.equal(true);
  });
});
