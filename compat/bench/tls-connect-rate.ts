/**
 * Connections per second a listener accepts (tls-throughput's second figure): `concurrency` loops
 * each connect (plain TCP, or TLS with a full handshake: no session is offered for resumption), send
 * one ApiVersions v0 request, read its response and close, for `seconds`. Broker CPU per connection
 * from /proc.
 */
import net from 'node:net';
import { readFileSync } from 'node:fs';
import tls from 'node:tls';
import { encodeRequest } from '../../protocol/frame.js';
import { cpuSeconds, round } from './proc-stats.js';

export interface ConnectionRate {
  listener: string;
  connections: number;
  seconds: number;
  connectionsPerSec: number;
  brokerCpuMsPerConnection: number;
  /** this process's CPU per connection (the client side of the handshakes runs here) */
  clientCpuMsPerConnection: number;
}

const API_VERSIONS = encodeRequest({ apiKey: 18, apiVersion: 0, correlationId: 1, clientId: 'conn-rate' }, {}, { sizePrefix: true });

/** One connection: connect, ApiVersions v0, its response, close. */
function oneConnection(host: string, port: number, ca: Buffer | null): Promise<void> {
  return new Promise((resolve, reject) => {
    const s: net.Socket = ca === null ? net.connect({ host, port }) : tls.connect({ host, port, ca, servername: 'localhost' });
    let got = 0;
    let want = -1;
    s.once(ca === null ? 'connect' : 'secureConnect', () => s.write(API_VERSIONS));
    s.on('data', (d: Buffer) => {
      if (want < 0 && got === 0 && d.length >= 4) want = d.readInt32BE(0) + 4;
      got += d.length;
      if (want >= 0 && got >= want) {
        s.destroy();
        resolve();
      }
    });
    s.once('error', reject);
    s.once('close', () => reject(new Error(`closed after ${got} bytes`)));
  });
}

export async function connectionRate(
  brokerPid: number,
  listener: string,
  address: string,
  tlsOpts: { ca: string } | null,
  opts: { seconds: number; concurrency: number },
): Promise<ConnectionRate> {
  const i = address.lastIndexOf(':');
  const host = address.slice(0, i);
  const port = Number(address.slice(i + 1));
  const ca = tlsOpts === null ? null : readFileSync(tlsOpts.ca);
  const cpu0 = cpuSeconds(brokerPid);
  const u0 = process.cpuUsage();
  const t0 = performance.now();
  const end = t0 + opts.seconds * 1000;
  let done = 0;
  await Promise.all(
    Array.from({ length: opts.concurrency }, async () => {
      while (performance.now() < end) {
        await oneConnection(host, port, ca);
        done++;
      }
    }),
  );
  const secs = (performance.now() - t0) / 1000;
  const cpu = cpuSeconds(brokerPid) - cpu0;
  const u = process.cpuUsage(u0);
  return {
    listener,
    connections: done,
    seconds: round(secs, 2),
    connectionsPerSec: Math.round(done / secs),
    brokerCpuMsPerConnection: round((cpu * 1000) / done, 3),
    clientCpuMsPerConnection: round((u.user + u.system) / 1000 / done, 3),
  };
}
