import { expect } from 'chai';
import { newClusterId, newTopicId } from '../../../lib/metadata/names.js';

describe('cluster and topic ids', () => {
  it("cluster ids are Kafka's: 16 random bytes as 22 URL-safe base64 characters, all distinct", () => {
    const ids = Array.from({ length: 1000 }, () => newClusterId());
    for (const id of ids) expect(id).to.match(/^[A-Za-z0-9_-]{22}$/);
    expect(new Set(ids).size).to.equal(ids.length);
    expect(Buffer.from(ids[0] ?? '', 'base64url').length).to.equal(16);
  });

  it('topic ids are 32 hex digits, never all zero, all distinct', () => {
    const ids = Array.from({ length: 1000 }, () => newTopicId());
    for (const id of ids)
      expect(id)
        .to.match(/^[0-9a-f]{32}$/)
        .and.not.match(/^0+$/);
    expect(new Set(ids).size).to.equal(ids.length);
  });
});
