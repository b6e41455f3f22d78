/**
 * A Kafka listener: one net.Server, connection limits (max.connections, max.connections.per.ip
 * and its overrides, shared by the broker's listeners through ConnectionQuotas), the broker-wide
 * RequestBudget its connections read under, the request read timeout, socket buffer sizes, and a
 * graceful close that lets in-flight requests answer before the sockets end.
 */
import net from 'node:net';
import type { Logger } from '../observability/logger.js';
import { acceptTls } from './tls-accept.js';
import { ANONYMOUS } from './tls-principal.js';
import type { TlsListenerSettings } from './tls.js';
import type { SaslSession } from '../security/sasl/session.js';
import { RateLimitedLog } from './rate-limited-log.js';
import type { RequestObserver } from '../observability/request-timing.js';
import { Connection, type Dispatch } from './connection.js';
import { bindServer } from './bind.js';
import { applyBufferSizes } from './socket-buffers.js';
import { ConnectionQuotas } from './connection-quotas.js';
import { AcceptGate, type ConnectionCreationRates } from './connection-rate.js';
import { RequestBudget } from './request-budget.js';

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
  /** the broker's connection limits (shared by its listeners); none: the three limits below, for this listener alone */
  quotas?: ConnectionQuotas;
  /** connection creation rates (KIP-612), shared by the broker's listeners */
  connectionRates?: ConnectionCreationRates;
  /** max.connections */
  maxConnections?: number;
  /** max.connections.per.ip */
  maxConnectionsPerIp?: number;
  /** max.connections.per.ip.overrides: address → limit */
  maxConnectionsPerIpOverrides?: Map<string, number>;
  /** the broker-wide budget of requests read and not yet handled; none: unlimited */
  budget?: RequestBudget;
  /** gregor.request.read.timeout.ms: a request partly received for this long closes its connection; <= 0 disables */
  requestReadTimeoutMs?: number;
  /** requests one connection reads ahead, behind the in-flight one, before reading pauses (default 16) */
  maxQueuedRequests?: number;
  /** bytes of requests one connection reads ahead before reading pauses (default 1 MiB; one request of any size is read) */
  maxQueuedBytes?: number;
  /** told about every request once answered (request metrics and log); none: requests are not timed */
  requestObserver?: RequestObserver;
  /** gregor.socket.read.direct: plain TCP connections read into the frame being assembled (default true) */
  readDirect?: boolean;
  /** gregor.socket.write.direct: plain TCP connections send responses to the socket's descriptor while the stream holds nothing (default true) */
  writeDirect?: boolean;
  /** gregor.fetch.sendfile (with gregor.fetch.zero.copy): plain TCP connections send stored batches from their files */
  sendFile?: boolean;
  /** an SSL (or SASL_SSL) listener's TLS settings; none: PLAINTEXT */
  tls?: TlsListenerSettings;
  /** a SASL_PLAINTEXT / SASL_SSL listener: makes each connection's SASL session */
  sasl?: () => SaslSession;
}

const DEFAULT_GRACE_MS = 30_000;
/** A TLS record header (handshake, SSL 3.0 / TLS 1.x) where a Kafka request size is expected. */
export function looksLikeTls(chunk: Buffer): boolean {
  return chunk.length >= 3 && chunk[0] === 0x16 && chunk[1] === 0x03 && (chunk[2] ?? 9) <= 0x04;
}

export class KafkaServer {
  private readonly server: net.Server;
  private readonly conns = new Map<string, Connection>();
  private readonly quotas: ConnectionQuotas;
  private readonly budget: RequestBudget;
  private readonly logger: Logger;
  private nextIndex = 0;
  private closing: Promise<void> | null = null;
  /** connection refusals, TLS failures and read timeouts: one line per class per 10 s */
  private readonly refusals: RateLimitedLog;
  private sweep: NodeJS.Timeout | undefined;
  /** new connections waiting under max.connection.creation.rate */
  private readonly gate: AcceptGate | null;

  constructor(
    private readonly opts: ListenerOptions,
    private readonly dispatch: Dispatch,
    logger: Logger,
  ) {
    this.logger = logger.child({ listener: opts.name });
    this.refusals = new RateLimitedLog(this.logger);
    this.quotas =
      opts.quotas ??
      new ConnectionQuotas({
        maxConnections: opts.maxConnections ?? Number.MAX_SAFE_INTEGER,
        maxConnectionsPerIp: opts.maxConnectionsPerIp ?? Number.MAX_SAFE_INTEGER,
        ...(opts.maxConnectionsPerIpOverrides === undefined ? {} : { overrides: opts.maxConnectionsPerIpOverrides }),
      });
    this.gate = opts.connectionRates === undefined ? null : new AcceptGate(opts.connectionRates, opts.name);
    this.budget = opts.budget ?? new RequestBudget(Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
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
    const timeoutMs = this.opts.requestReadTimeoutMs ?? 0;
    if (timeoutMs > 0) {
      this.sweep = setInterval(() => this.closeStalledReads(timeoutMs), Math.max(10, Math.min(1000, timeoutMs / 4)));
      this.sweep.unref();
    }
    this.logger.info({ host: addr.host, port: addr.port }, 'listening');
    return addr;
  }

  /** Closes connections that have been receiving one request for longer than the request read timeout (slow-loris). */
  private closeStalledReads(timeoutMs: number): void {
    const now = Date.now();
    for (const c of this.conns.values()) {
      if (!c.readStalled(now, timeoutMs)) continue;
      c.destroy();
      const cls = 'gregor.request.read.timeout.ms';
      this.refusals.warn(
        cls,
        { remoteAddress: c.info.remoteAddress, remotePort: c.info.remotePort, [cls]: timeoutMs },
        'closing connection: request not received whole within gregor.request.read.timeout.ms',
      );
    }
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
    clearInterval(this.sweep);
    this.gate?.close();
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
    // counted from here (before a TLS handshake) until the connection is done
    const reject = this.quotas.tryAccept(remoteAddress);
    if (reject !== null) {
      socket.destroy();
      this.refusals.warn(reject.limit, { remoteAddress, [reject.limit]: reject.max }, `rejected connection: ${reject.limit} reached`);
      return;
    }
    const rates = this.opts.connectionRates;
    const closeAfterMs = rates?.ipThrottle(remoteAddress) ?? 0;
    if (closeAfterMs > 0) {
      // Kafka: a connection over its address's connection_creation_rate is closed after the throttle time
      const cls = 'connection_creation_rate';
      this.refusals.warn(cls, { remoteAddress, closeAfterMs }, 'throttled connection: connection_creation_rate of its address reached');
      setTimeout(() => {
        socket.destroy();
        this.quotas.release(remoteAddress);
      }, closeAfterMs);
      return;
    }
    const accept = (): void => this.accepted(socket, remoteAddress, remotePort);
    if (this.gate === null) accept();
    else {
      // not read until served: without a 'data' listener the socket's bytes wait in the kernel
      this.gate.enter(
        () => {
          if (socket.destroyed || this.closing !== null) {
            socket.destroy();
            this.quotas.release(remoteAddress);
          } else accept();
        },
        () => {
          socket.destroy();
          this.quotas.release(remoteAddress);
        },
      );
    }
  }

  /** A connection within the limits and rates: TLS handshake (SSL listeners), then served. */
  private accepted(socket: net.Socket, remoteAddress: string, remotePort: number): void {
    applyBufferSizes(socket, this.opts.socketSendBufferBytes, this.opts.socketReceiveBufferBytes, this.logger);
    if (this.opts.tls === undefined) {
      this.serve(socket, remoteAddress, remotePort, ANONYMOUS);
      return;
    }
    let served = false;
    socket.once('close', () => {
      if (!served) this.quotas.release(remoteAddress);
    });
    acceptTls(socket, this.opts.tls, this.opts.connectionsMaxIdleMs, this.refusals, (tlsSocket, principal) => {
      served = true;
      if (this.closing !== null) {
        tlsSocket.destroy();
        this.quotas.release(remoteAddress);
      } else this.serve(tlsSocket, remoteAddress, remotePort, principal);
    });
  }

  /** Serves Kafka requests on an accepted (and, on an SSL listener, handshaken) socket. */
  private serve(socket: net.Socket, remoteAddress: string, remotePort: number, principal: string): void {
    const local = `${socket.localAddress ?? ''}:${socket.localPort ?? 0}`;
    const id = `${local}-${remoteAddress}:${remotePort}-${this.nextIndex++}`;
    const sasl = this.opts.sasl?.();
    const conn = new Connection(
      socket,
      { id, remoteAddress, remotePort, listenerName: this.opts.name, principal, ...(sasl === undefined ? {} : { sasl }) },
      this.dispatch,
      {
        socketRequestMaxBytes: this.opts.socketRequestMaxBytes,
        connectionsMaxIdleMs: this.opts.connectionsMaxIdleMs,
        maxQueuedRequests: this.opts.maxQueuedRequests ?? 16,
        maxQueuedBytes: this.opts.maxQueuedBytes ?? 1024 * 1024,
        budget: this.budget,
        readDirect: this.opts.tls === undefined && this.opts.readDirect !== false,
        writeDirect: this.opts.tls === undefined && this.opts.writeDirect !== false,
        sendFile: this.opts.tls === undefined && this.opts.sendFile === true,
        ...(this.opts.tls === undefined
          ? { screenFirstChunk: (chunk: Buffer) => this.screenPlaintext(chunk, remoteAddress, remotePort) }
          : {}),
      },
      this.logger,
      this.opts.requestObserver ?? null,
    );
    this.conns.set(id, conn);
    conn.info.logger.debug({ remoteAddress, remotePort }, 'connection accepted');
    // counted until the connection is done: after a peer's FIN, whole requests it sent are still being
    // processed (see Connection.headless), and a shutdown waits for them within its grace period
    void conn.closed.then(() => {
      this.conns.delete(id);
      this.quotas.release(remoteAddress);
    });
  }

  /** A PLAINTEXT listener's first bytes: a TLS ClientHello is refused with one line (and no request served). */
  private screenPlaintext(chunk: Buffer, remoteAddress: string, remotePort: number): boolean {
    if (!looksLikeTls(chunk)) return true;
    const cls = 'TLS client on a PLAINTEXT listener';
    this.refusals.warn(cls, { remoteAddress, remotePort }, `${cls}: connection closed`);
    return false;
  }
}

/** IPv4 clients of a dual-stack listener show up as ::ffff:a.b.c.d; count them by a.b.c.d. */
function normalizeAddress(addr: string): string {
  return addr.startsWith('::ffff:') && addr.includes('.') ? addr.slice(7) : addr;
}
