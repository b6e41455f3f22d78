import { expect } from 'chai';
import { ApiKey } from '../../../protocol/generated/api-keys.js';
import type { ApiVersionsResponse } from '../../../protocol/generated/api-versions.js';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import { decodeResponse } from '../../../protocol/frame.js';
import { startTestBroker, type TestBroker } from '../../helpers/broker.js';
import { RawClient } from '../../helpers/raw-client.js';
import { Cleanup } from '../../helpers/cleanup.js';

function ranges(res: ApiVersionsResponse): Map<number, [number, number]> {
  return new Map(res.apiKeys.map((k) => [k.apiKey, [k.minVersion, k.maxVersion]]));
}

describe('ApiVersions and broker.version.emulate', () => {
  describe('default (Kafka 3.9 ranges)', () => {
    let b: TestBroker;
    const cleanup = new Cleanup();
    before(async () => (b = cleanup.add(await startTestBroker(), (t) => t.stop())));
    after(() => cleanup.run());

    it('advertises full ranges from version 0 for the data path', async () => {
      const c = await RawClient.connect(b.bootstrap);
      const res = await c.request<ApiVersionsResponse>(ApiKey.ApiVersions, 3, {
        clientSoftwareName: 'gregor-test',
        clientSoftwareVersion: '1.0',
      });
      c.destroy();
      expect(res.errorCode).to.equal(ErrorCode.NONE);
      const r = ranges(res);
      expect(r.get(ApiKey.Produce)).to.deep.equal([0, 11]);
      expect(r.get(ApiKey.Fetch)).to.deep.equal([0, 17]);
      expect(r.get(ApiKey.Metadata)).to.deep.equal([0, 12]);
      expect(r.get(ApiKey.ListOffsets)).to.deep.equal([0, 9]);
      expect(r.get(ApiKey.ApiVersions)).to.deep.equal([0, 4]);
      expect(r.get(ApiKey.OffsetForLeaderEpoch)).to.deep.equal([2, 4]);
    });

    it('refuses a malformed client software name with INVALID_REQUEST (KIP-511)', async () => {
      const c = await RawClient.connect(b.bootstrap);
      const res = await c.request<ApiVersionsResponse>(ApiKey.ApiVersions, 3, {
        clientSoftwareName: 'bad name!',
        clientSoftwareVersion: '1',
      });
      c.destroy();
      expect(res.errorCode).to.equal(ErrorCode.INVALID_REQUEST);
    });

    it('answers an unsupported ApiVersions version with a v0 body, UNSUPPORTED_VERSION and the key list', async () => {
      const c = await RawClient.connect(b.bootstrap);
      await c.send(ApiKey.ApiVersions, 4, { clientSoftwareName: 'x', clientSoftwareVersion: '1' }, 7);
      // Ask for v9 by patching the version in a v4 frame: the body is not parsed.
      const [first] = await c.waitResponses(1);
      expect(first).to.not.equal(undefined);
      const frame = Buffer.from([0, 0, 0, 10, 0, 18, 0, 9, 0, 0, 0, 8, 0xff, 0xff]);
      await c.write(frame);
      const [, second] = await c.waitResponses(2);
      const v0 = decodeResponse(ApiKey.ApiVersions, 0, second?.frame ?? Buffer.alloc(0));
      c.destroy();
      expect(v0.correlationId).to.equal(8);
      const body = v0.body as ApiVersionsResponse;
      expect(body.errorCode).to.equal(ErrorCode.UNSUPPORTED_VERSION);
      expect(ranges(body).get(ApiKey.ApiVersions)).to.deep.equal([0, 4]);
    });
  });

  describe('emulating Kafka 0.10.0', () => {
    let b: TestBroker;
    const cleanup = new Cleanup();
    before(async () => (b = cleanup.add(await startTestBroker({ 'broker.version.emulate': '0.10.0' }), (t) => t.stop())));
    after(() => cleanup.run());

    it("advertises exactly 0.10.0's ranges for the APIs gregor serves", async () => {
      const c = await RawClient.connect(b.bootstrap);
      const res = await c.request<ApiVersionsResponse>(ApiKey.ApiVersions, 0, {});
      c.destroy();
      const r = ranges(res);
      expect(r.get(ApiKey.Produce)).to.deep.equal([0, 2]);
      expect(r.get(ApiKey.Fetch)).to.deep.equal([0, 2]);
      expect(r.get(ApiKey.ListOffsets)).to.deep.equal([0, 0]);
      expect(r.get(ApiKey.Metadata)).to.deep.equal([0, 1]);
      expect(r.get(ApiKey.ApiVersions)).to.deep.equal([0, 0]);
      // APIs that 0.10.0 did not have are not advertised at all.
      expect(r.has(ApiKey.CreateTopics)).to.equal(false);
      expect(r.has(ApiKey.OffsetForLeaderEpoch)).to.equal(false);
    });

    it('closes the connection on a version 0.10.0 did not have (e.g. Produce v3)', async () => {
      const c = await RawClient.connect(b.bootstrap);
      await c.send(ApiKey.Produce, 3, { transactionalId: null, acks: 1, timeoutMs: 1000, topicData: [] });
      expect(await c.waitClosed(5000)).to.equal(true);
    });
  });

  it('refuses an unknown release at start-up', async () => {
    let err: unknown;
    try {
      await startTestBroker({ 'broker.version.emulate': '0.7.1' });
    } catch (e) {
      err = e;
    }
    expect(String(err)).to.match(/broker.version.emulate=0.7.1: unknown release/);
  });
});
