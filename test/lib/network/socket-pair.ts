/** A connected loopback TCP pair for tests of what a connection writes (response-writer, direct-write). */
import net from 'node:net';

/** A connected pair over loopback: the accepted (server) side and the client side. */
export async function pair(): Promise<{ server: net.Socket; client: net.Socket; close: () => void }> {
  const listener = net.createServer();
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const { port } = listener.address() as net.AddressInfo;
  const accepted = new Promise<net.Socket>((resolve) => listener.once('connection', resolve));
  const client = net.connect(port, '127.0.0.1');
  const server = await accepted;
  listener.close();
  // a peer that goes away resets the connection: the tests look at the close, not at the error
  server.on('error', () => undefined);
  client.on('error', () => undefined);
  return {
    server,
    client,
    close: () => {
      server.destroy();
      client.destroy();
    },
  };
}

/** Everything the client reads until the server ends the connection. */
export function readAll(client: net.Socket): Promise<Buffer> {
  const got: Buffer[] = [];
  client.on('data', (d: Buffer) => got.push(d));
  return new Promise((resolve, reject) => {
    client.once('end', () => resolve(Buffer.concat(got)));
    client.once('error', reject);
  });
}
