/** Binding a listening socket, shared by the Kafka listeners and the admin HTTP listener. */
import type net from 'node:net';

/**
 * Binds `server` to host:port; resolves with the bound address (the real port when 0 was asked) or
 * rejects with the bind error (EADDRINUSE, EACCES, ...). Later 'error' events go to `onLaterError`.
 */
export function bindServer(
  server: net.Server,
  host: string,
  port: number,
  onLaterError: (err: Error) => void,
): Promise<{ host: string; port: number }> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error): void => reject(err);
    server.once('error', onError);
    server.listen({ host, port }, () => {
      server.off('error', onError);
      server.on('error', onLaterError);
      const addr = server.address() as net.AddressInfo;
      resolve({ host: addr.address, port: addr.port });
    });
  });
}
