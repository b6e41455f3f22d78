import { expect } from 'chai';
import { Etcd3 } from 'etcd3';
import { startEtcd } from '../../../lib/cluster/etcd-server.js';
import { GregorMetadataErrorCode } from '../../../lib/metadata/store.js';
import { Cleanup } from '../../helpers/cleanup.js';
import { expectMetadataError, rejection, tempDir } from '../../helpers/etcd.js';

describe('lib/cluster startEtcd', function () {
  this.timeout(30_000);
  const each = new Cleanup();
  afterEach(() => each.run());

  it('says how to install etcd when the binary is missing', async () => {
    const e = await rejection(startEtcd({ binary: '/nonexistent/etcd' }));
    expectMetadataError(e, GregorMetadataErrorCode.ETCD);
    expect(e.message).to.equal(
      'GREGOR_ERR_ETCD: etcd binary not found: install the Debian package etcd-server or run scripts/setup-system.sh',
    );
  });

  it('restarts on the same port and data dir, keeping the keys; keeps a data dir it was given', async () => {
    const dir = await tempDir(each);
    const etcd = each.add(await startEtcd({ dataDir: dir }), (e) => e.stop());
    expect(etcd.endpoints).to.match(/^http:\/\/127\.0\.0\.1:\d+$/);
    const client = each.add(new Etcd3({ hosts: etcd.endpoints }), (c) => c.close());
    await client.put('k').value('v');
    etcd.kill('SIGKILL');
    await etcd.restart();
    expect(await client.get('k').string()).to.equal('v');
    await etcd.stop();
    // a second member on the kept data dir still has the key
    const again = each.add(await startEtcd({ dataDir: dir }), (e) => e.stop());
    const c2 = each.add(new Etcd3({ hosts: again.endpoints }), (c) => c.close());
    expect(await c2.get('k').string()).to.equal('v');
  });
});
