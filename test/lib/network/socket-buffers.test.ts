import { expect } from 'chai';
import net from 'node:net';
import { readBufferSizes, sockoptAddon, sockoptLoadError, socketFd } from '../../../lib/network/socket-buffers.js';
import { Client, eventually, startServer, type Harness } from './helpers.js';

/** What an accepted socket gets from this OS when nobody sets anything. */
async function osDefaults(): Promise<{ snd: number; rcv: number }> {
  let accepted: net.Socket | undefined;
  const srv = net.createServer((s) => (accepted = s));
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const c = net.connect((srv.address() as net.AddressInfo).port, '127.0.0.1');
  await eventually(() => accepted !== undefined);
  const sizes = readBufferSizes(accepted!)!;
  c.destroy();
  accepted!.destroy();
  await new Promise((r) => srv.close(r));
  return sizes;
}

describe('network: socket.send.buffer.bytes / socket.receive.buffer.bytes', () => {
  let h: Harness | undefined;
  const clients: Client[] = [];
  afterEach(async () => {
    for (const c of clients.splice(0)) c.destroy();
    await h?.server.close(100);
    h = undefined;
  });

  async function acceptedSockets(n: number): Promise<net.Socket[]> {
    for (let i = 0; i < n; i++) clients.push(await Client.connect(h!.port));
    await eventually(() => h!.server.connectionCount === n);
    return [...h!.server.connections.values()].map((c) => c.socket);
  }

  it('the sockopt addon is built and loads', () => {
    expect(sockoptLoadError()).to.equal(null);
    expect(sockoptAddon()).to.not.equal(null);
  });

  it('applies 102400 to every accepted socket (Linux reports it doubled)', async () => {
    h = await startServer({ socketSendBufferBytes: 102400, socketReceiveBufferBytes: 102400 });
    const sockets = await acceptedSockets(3);
    for (const s of sockets) {
      expect(socketFd(s)).to.be.a('number');
      expect(readBufferSizes(s)).to.deep.equal({ snd: 204800, rcv: 204800 });
    }
  });

  it('applies different send and receive sizes', async () => {
    h = await startServer({ socketSendBufferBytes: 65536, socketReceiveBufferBytes: 262144 });
    const [s] = await acceptedSockets(1);
    expect(readBufferSizes(s!)).to.deep.equal({ snd: 131072, rcv: 524288 });
  });

  it('-1 leaves the OS defaults', async () => {
    const defaults = await osDefaults();
    h = await startServer({ socketSendBufferBytes: -1, socketReceiveBufferBytes: -1 });
    const [s] = await acceptedSockets(1);
    expect(readBufferSizes(s!)).to.deep.equal(defaults);
  });

  it('-1 for one option leaves only that one alone', async () => {
    const defaults = await osDefaults();
    h = await startServer({ socketSendBufferBytes: 102400, socketReceiveBufferBytes: -1 });
    const [s] = await acceptedSockets(1);
    expect(readBufferSizes(s!)).to.deep.equal({ snd: 204800, rcv: defaults.rcv });
  });

  it('the addon rejects bad arguments and bad fds with GREGOR_ERR_SOCKOPT', () => {
    const addon = sockoptAddon()!;
    expect(() => addon.getBufferSizes('x' as unknown as number))
      .to.throw()
      .with.property('code', 'GREGOR_ERR_SOCKOPT');
    expect(() => addon.setBufferSizes(1_000_000, 1, 1)).to.throw(/Bad file descriptor/);
  });
});
