/**
 * A Kafka listener: one net.Server, connection limits (max.connections, max.connections.per.ip
 * and its overrides), socket buffer sizes, and a graceful close that lets in-flight requests
 * answer before the sockets end.
 */
import net from 'node:net';
import type { Logger } from '../observability/logger.js';
import { acceptTls } from './tls-accept.js';
import { ANONYMOUS } from './tls-principal.js';
import type { TlsListenerSettings } from './tls.js';
import { RateLimitedLog } from './rate-limited-log.js';
import type { RequestObserver } from '../observability/request-timing.js';
import { Connection, type Dispatch } from './connection.js';
import { bindServer } from './bind.js';
import { applyBufferSizes } from './socket-buffers.js';

export type { ConnectionInfo, Dispatch, DispatchResult } from './connection.js';

export interface ListenerOptions {
  /** listener name, e.g. PLAINTEXT */
  name: string;
  host: string;
  /** 0 = ephemeral */
  port: number;
  /** socket.send.buffer.bytes; -1 = OS default */
  socketSendBufferBytes: number;
  /** socket.receive.buffer.bytes; -1 = OS default */
  socketReceiveBufferBytes: number;
  /** socket.request.max.bytes */
  socketRequestMaxBytes: number;
  /** connections.max.idle.ms */
  connectionsMaxIdleMs: number;
  /** max.connections (this listener) */
  maxConnections: number;
  /** max.connections.per.ip */
  maxConnectionsPerIp: number;
  /** max.connections.per.ip.overrides: address → limit */
  maxConnectionsPerIpOverrides?: Map<string, number>;
  /** requests waiting behind the in-flight one before reading pauses (default 16) */
  maxQueuedRequests?: number;
  /** bytes of waiting requests before reading pauses (default 16 MiB) */
  maxQueuedBytes?: number;
  /** told about every request once answered (request metrics and log); none: requests are not timed */
  requestObserver?: RequestObserver;
  /** an SSL listener's TLS settings; none: PLAINTEXT */
  tls?: TlsListenerSettings;
}

const DEFAULT_GRACE_MS = 30_000;
/** A TLS record header (handshake, SSL 3.0 / TLS 1.x) where a Kafka request size is expected. */
export function looksLikeTls(chunk: Buffer): boolean {
  return chunk.length >= 3 && chunk[0] === 0x16 && chunk[1] === 0x03 && (chunk[2] ?? 9) <= 0x04;
}

export class KafkaServer {
  private readonly server: net.Server;
  private readonly conns = new Map<string, Connection>();
  private readonly perIp = new Map<string, number>();
  private readonly logger: Logger;
  private nextIndex = 0;
  private closing: Promise<void> | null = null;
  /** connection refusals and TLS failures: one line per class per 10 s */
  private readonly refusals: RateLimitedLog;

  constructor(
    private readonly opts: ListenerOptions,
    private readonly dispatch: Dispatch,
    logger: Logger,
  ) {
    this.logger = logger.child({ listener: opts.name });
    this.refusals = new RateLimitedLog(this.logger);
    // Kafka sets TCP_NODELAY and SO_KEEPALIVE on accepted sockets.
    this.server = net.createServer({ noDelay: true, keepAlive: true, allowHalfOpen: false }, (s) => this.onConnection(s));
  }

  /** Binds and starts accepting; resolves with the bound address (the real port when 0 was asked). */
  async listen(): Promise<{ host: string; port: number }> {
    const addr = await bindServer(this.server, this.opts.host, this.opts.port, (err) =>
      this.logger.error({ err: err.message }, 'listener error'),
    );
    // Accepted sockets inherit SO_RCVBUF from the listening one: set it there too so the TCP
    // window scale in the handshake already reflects it (Kafka does the same).
    applyBufferSizes(this.server, -1, this.opts.socketReceiveBufferBytes, this.logger);
    this.logger.info({ host: addr.host, port: addr.port }, 'listening');
    return addr;
  }

  /** The listener's name (e.g. PLAINTEXT). */
  get name(): string {
    return this.opts.name;
  }

  get connectionCount(): number {
    return this.conns.size;
  }

  /** Live connections by id (for metrics, admin and tests). */
  get connections(): ReadonlyMap<string, Connection> {
    return this.conns;
  }

  /**
   * Stops accepting; lets in-flight (and already received) requests finish and their responses
   * flush, then ends the sockets. Sockets still open after graceMs are destroyed.
   */
  close(graceMs: number = DEFAULT_GRACE_MS): Promise<void> {
    this.closing ??= this.doClose(graceMs);
    return this.closing;
  }

  private async doClose(graceMs: number): Promise<void> {
    const serverClosed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    const conns = [...this.conns.values()];
    for (const c of conns) c.beginClose();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), graceMs);
    });
    const outcome = await Promise.race([Promise.all(conns.map((c) => c.closed)).then(() => 'done' as const), deadline]);
    clearTimeout(timer);
    if (outcome === 'timeout') {
      const left = [...this.conns.values()];
      if (left.length > 0) this.logger.warn({ connections: left.length, graceMs }, 'grace period over: destroying connections');
      for (const c of left) c.destroy();
      await Promise.all(left.map((c) => c.closed));
    }
    await serverClosed;
    this.logger.info('listener closed');
  }

  private onConnection(socket: net.Socket): void {
    const remoteAddress = normalizeAddress(socket.remoteAddress ?? '');
    const remotePort = socket.remotePort ?? 0;
    socket.on('error', () => {}); // until the Connection takes over (rejected sockets too)
    if (this.closing !== null) {
      socket.destroy();
      return;
    }
    const reject = this.rejection(remoteAddress);
    if (reject !== null) {
      socket.destroy();
      this.refusals.warn(reject.limit, { remoteAddress, [reject.limit]: reject.max }, `rejected connection: ${reject.limit} reached`);
      return;
    }
    applyBufferSizes(socket, this.opts.socketSendBufferBytes, this.opts.socketReceiveBufferBytes, this.logger);
    if (this.opts.tls === undefined) {
      this.serve(socket, remoteAddress, remotePort, ANONYMOUS);
      return;
    }
    // counted from the start of the handshake, as the limits above assume
    this.perIp.set(remoteAddress, (this.perIp.get(remoteAddress) ?? 0) + 1);
    const release = (): void => this.releaseIp(remoteAddress);
    let served = false;
    socket.once('close', () => {
      if (!served) release();
    });
    acceptTls(socket, this.opts.tls, this.opts.connectionsMaxIdleMs, this.refusals, (tlsSocket, principal) => {
      served = true;
      release();
      if (this.closing !== null) tlsSocket.destroy();
      else this.serve(tlsSocket, remoteAddress, remotePort, principal);
    });
  }

  private releaseIp(remoteAddress: string): void {
    const n = (this.perIp.get(remoteAddress) ?? 1) - 1;
    if (n <= 0) this.perIp.delete(remoteAddress);
    else this.perIp.set(remoteAddress, n);
  }

  /** Serves Kafka requests on an accepted (and, on an SSL listener, handshaken) socket. */
  private serve(socket: net.Socket, remoteAddress: string, remotePort: number, principal: string): void {
    const local = `${socket.localAddress ?? ''}:${socket.localPort ?? 0}`;
    const id = `${local}-${remoteAddress}:${remotePort}-${this.nextIndex++}`;
    const conn = new Connection(
      socket,
      { id, remoteAddress, remotePort, listenerName: this.opts.name, principal },
      this.dispatch,
      {
        socketRequestMaxBytes: this.opts.socketRequestMaxBytes,
        connectionsMaxIdleMs: this.opts.connectionsMaxIdleMs,
        maxQueuedRequests: this.opts.maxQueuedRequests ?? 16,
        maxQueuedBytes: this.opts.maxQueuedBytes ?? 16 * 1024 * 1024,
        ...(this.opts.tls === undefined
          ? { screenFirstChunk: (chunk: Buffer) => this.screenPlaintext(chunk, remoteAddress, remotePort) }
          : {}),
      },
      this.logger,
      this.opts.requestObserver ?? null,
    );
    this.conns.set(id, conn);
    this.perIp.set(remoteAddress, (this.perIp.get(remoteAddress) ?? 0) + 1);
    conn.info.logger.debug({ remoteAddress, remotePort }, 'connection accepted');
    // counted until the connection is done: after a peer's FIN, whole requests it sent are still being
    // processed (see Connection.headless), and a shutdown waits for them within its grace period
    void conn.closed.then(() => {
      this.conns.delete(id);
      this.releaseIp(remoteAddress);
    });
  }

  /** A PLAINTEXT listener's first bytes: a TLS ClientHello is refused with one line (and no request served). */
  private screenPlaintext(chunk: Buffer, remoteAddress: string, remotePort: number): boolean {
    if (!looksLikeTls(chunk)) return true;
    const cls = 'TLS client on a PLAINTEXT listener';
    this.refusals.warn(cls, { remoteAddress, remotePort }, `${cls}: connection closed`);
    return false;
  }

  /** Why a new connection from `ip` must be refused, or null. */
  private rejection(ip: string): { limit: string; max: number } | null {
    if (this.conns.size >= this.opts.maxConnections) return { limit: 'max.connections', max: this.opts.maxConnections };
    const max = this.opts.maxConnectionsPerIpOverrides?.get(ip) ?? this.opts.maxConnectionsPerIp;
    if ((this.perIp.get(ip) ?? 0) >= max) return { limit: 'max.connections.per.ip', max };
    return null;
  }
}

/** IPv4 clients of a dual-stack listener show up as ::ffff:a.b.c.d; count them by a.b.c.d. */
function normalizeAddress(addr: string): string {
  return addr.startsWith('::ffff:') && addr.includes('.') ? addr.slice(7) : addr;
}
