// Recording TCP relay for Kafka frame captures.
//
// Listens on 127.0.0.1:<port>, opens one upstream connection (to the mock broker) per accepted
// client connection, copies bytes both ways and splits each direction into 4-byte size-prefixed
// frames. Requests are decoded just far enough to read the header (apiKey int16, apiVersion int16,
// correlationId int32, clientId int16-length string); responses (correlationId int32 first) are
// paired with their request by correlation id, per connection.
//
// The mock advertises its own address in Metadata / FindCoordinator responses, which would make
// clients bypass the relay on their second connection. The relay therefore rewrites, in responses,
// every occurrence of <int16 len>"<upstream host>"<int32 upstream port> to carry the relay's port
// instead (same length, so sizes do not change). Recorded responses are the rewritten bytes, i.e.
// exactly what the client received.
//
// Usage as a module:  const relay = await startRelay({ upstream: '127.0.0.1:1234' }); relay.port;
//                      relay.frames (array, in arrival order); await relay.close();
// Usage as a CLI:     node relay.mjs 127.0.0.1:UPSTREAM [LISTEN_PORT]  (prints frames as JSON lines)

import net from 'node:net';
import { pathToFileURL } from 'node:url';

/**
 * @typedef {{ seq: number, connection: number, direction: 'request'|'response', apiKey: number,
 *             apiVersion: number, correlationId: number, clientId?: string|null, bytes: Buffer,
 *             requestSeq?: number, time: number }} Frame
 */

/** Replace <int16 len><host><int32 fromPort> by the same with toPort, in place. */
function rewriteAdvertisedPort(buf, host, fromPort, toPort) {
  const needle = Buffer.alloc(2 + host.length + 4);
  needle.writeInt16BE(host.length, 0);
  needle.write(host, 2, 'latin1');
  needle.writeInt32BE(fromPort, 2 + host.length);
  let count = 0;
  let at = buf.indexOf(needle);
  while (at !== -1) {
    buf.writeInt32BE(toPort, at + 2 + host.length);
    count++;
    at = buf.indexOf(needle, at + needle.length);
  }
  return count;
}

/** Splits a byte stream into size-prefixed frames. */
class FrameSplitter {
  constructor(onFrame) {
    this.buf = Buffer.alloc(0);
    this.onFrame = onFrame;
  }
  push(chunk) {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    const out = [];
    while (this.buf.length >= 4) {
      const size = this.buf.readInt32BE(0);
      if (size < 0 || size > 64 * 1024 * 1024) throw new Error(`bad frame size ${size}`);
      if (this.buf.length < 4 + size) break;
      out.push(Buffer.from(this.buf.subarray(0, 4 + size)));
      this.buf = this.buf.subarray(4 + size);
    }
    return out;
  }
}

/**
 * @param {{ upstream: string, port?: number, onFrame?: (f: Frame) => void, log?: (s: string) => void }} opts
 */
export async function startRelay(opts) {
  const [upHost, upPortStr] = opts.upstream.split(':');
  const upPort = Number(upPortStr);
  /** @type {Frame[]} */
  const frames = [];
  const sockets = new Set();
  let seq = 0;
  let connCount = 0;
  const t0 = Date.now();
  const log = opts.log ?? (() => {});

  const server = net.createServer((client) => {
    const connection = ++connCount;
    const upstream = net.connect({ host: upHost, port: upPort });
    sockets.add(client);
    sockets.add(upstream);
    /** correlationId -> request frame */
    const pending = new Map();
    const reqSplit = new FrameSplitter();
    const resSplit = new FrameSplitter();
    const closeBoth = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };

    client.on('data', (chunk) => {
      let parts;
      try {
        parts = reqSplit.push(chunk);
      } catch (e) {
        log(`relay conn ${connection}: ${e.message}`);
        closeBoth();
        return;
      }
      for (const framed of parts) {
        const body = framed.subarray(4);
        const apiKey = body.readInt16BE(0);
        const apiVersion = body.readInt16BE(2);
        const correlationId = body.readInt32BE(4);
        const idLen = body.length >= 10 ? body.readInt16BE(8) : -1;
        const clientId = idLen >= 0 ? body.toString('utf8', 10, 10 + idLen) : null;
        /** @type {Frame} */
        const f = {
          seq: seq++,
          connection,
          direction: 'request',
          apiKey,
          apiVersion,
          correlationId,
          clientId,
          bytes: Buffer.from(body),
          time: Date.now() - t0,
        };
        pending.set(correlationId, f);
        frames.push(f);
        opts.onFrame?.(f);
        upstream.write(framed);
      }
    });
    upstream.on('data', (chunk) => {
      let parts;
      try {
        parts = resSplit.push(chunk);
      } catch (e) {
        log(`relay conn ${connection}: ${e.message}`);
        closeBoth();
        return;
      }
      for (const framed of parts) {
        const body = framed.subarray(4);
        const correlationId = body.readInt32BE(0);
        const req = pending.get(correlationId);
        pending.delete(correlationId);
        // Metadata (3) and FindCoordinator (10) carry broker addresses.
        if (req && (req.apiKey === 3 || req.apiKey === 10)) {
          rewriteAdvertisedPort(body, upHost, upPort, server.address().port);
        }
        /** @type {Frame} */
        const f = {
          seq: seq++,
          connection,
          direction: 'response',
          apiKey: req ? req.apiKey : -1,
          apiVersion: req ? req.apiVersion : -1,
          correlationId,
          bytes: Buffer.from(body),
          requestSeq: req?.seq,
          time: Date.now() - t0,
        };
        frames.push(f);
        opts.onFrame?.(f);
        client.write(framed);
      }
    });
    client.on('close', closeBoth);
    upstream.on('close', closeBoth);
    client.on('error', closeBoth);
    upstream.on('error', (e) => {
      log(`relay conn ${connection}: upstream ${e.message}`);
      closeBoth();
    });
  });

  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', resolve);
  });

  return {
    port: /** @type {net.AddressInfo} */ (server.address()).port,
    get bootstrap() {
      return `127.0.0.1:${this.port}`;
    },
    frames,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [upstream, port] = process.argv.slice(2);
  if (!upstream) {
    console.error('usage: node relay.mjs HOST:PORT [LISTEN_PORT]');
    process.exit(2);
  }
  const relay = await startRelay({
    upstream,
    port: port ? Number(port) : 0,
    log: (s) => console.error(s),
    onFrame: (f) =>
      console.log(
        JSON.stringify({
          seq: f.seq,
          connection: f.connection,
          direction: f.direction,
          apiKey: f.apiKey,
          apiVersion: f.apiVersion,
          correlationId: f.correlationId,
          hex: f.bytes.toString('hex'),
        }),
      ),
  });
  console.error(`relay listening on ${relay.bootstrap} -> ${upstream}`);
}
