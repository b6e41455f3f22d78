/** A TCP port free on 127.0.0.1 right now (bound, then released), for configs that need the port up front. */
import net from 'node:net';

export function freePort(): Promise<number> {
  const s = net.createServer();
  return new Promise((resolve, reject) => {
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}
