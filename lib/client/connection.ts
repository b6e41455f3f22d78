/**
 * One TCP connection to one broker: size-prefixed frames, correlation ids (requests may be
 * pipelined), per-request timeouts, and the ApiVersions exchange that fixes which version of each
 * API is used: the highest that both the broker and our generated codecs speak.
 */
import net from 'node:net';
import { encodeRequest } from '../../protocol/frame.js';
import { API_KEYS } from '../../protocol/generated/api-keys.js';
import { formatAddress, type BrokerAddress } from './address.js';
import { decodeResponseBody, responseHeaderSize } from './decode.js';
import { ClientError, ClientErrorCode, kafkaError } from './errors.js';
import { negotiateApiVersions, type ApiRange } from './versions.js';

export interface ConnectionOptions {
  clientId: string;
  connectTimeoutMs: number;
  requestTimeoutMs: number;
  /** ApiVersions v3+ client software name and version (KIP-511) */
  softwareName: string;
  softwareVersion: string;
}

export interface RequestOptions {
  /** lowest version the caller can build (default: the codec's lowest) */
  minVersion?: number;
  /** highest version the caller can build (default: the codec's highest) */
  maxVersion?: number;
  /** default: the connection's request timeout */
  timeoutMs?: number;
  /** the request gets no response (Produce with acks=0): resolves once written */
  noResponse?: boolean;
  /**
   * Reads what it can of a response the codec rejects (e.g. the librdkafka mock's SyncGroup errors
   * carry a null assignment, which Kafka's schema does not allow). `body` starts after the header.
   */
  fallback?: (body: Buffer, version: number) => unknown;
}

export interface Response<T> {
  version: number;
  body: T;
}

interface Pending {
  apiKey: number;
  version: number;
  fallback: ((body: Buffer, version: number) => unknown) | undefined;
  /** null: resolve with the raw frame (ApiVersions decodes its own) */
  raw: boolean;
  resolve(v: unknown): void;
  reject(e: Error): void;
  timer: NodeJS.Timeout;
}

/** Largest response frame accepted (Kafka's socket.request.max.bytes is 100 MiB). */
const MAX_FRAME = 256 << 20;

export function apiName(apiKey: number): string {
  return API_KEYS.get(apiKey)?.name ?? `api ${apiKey}`;
}

function connectSocket(address: BrokerAddress, label: string, timeoutMs: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ host: address.host, port: address.port });
    const timer = setTimeout(() => {
      s.destroy();
      reject(new ClientError(ClientErrorCode.CONNECT, `cannot connect to ${label}: no answer within ${timeoutMs} ms`, { broker: label }));
    }, timeoutMs);
    s.once('connect', () => {
      clearTimeout(timer);
      s.removeAllListeners('error');
      s.setNoDelay(true);
      resolve(s);
    });
    s.once('error', (e: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(new ClientError(ClientErrorCode.CONNECT, `cannot connect to ${label}: ${e.code ?? e.message}`, { broker: label, cause: e }));
    });
  });
}

export class BrokerConnection {
  /** How errors name this broker: "broker 1 (127.0.0.1:9092)" or "bootstrap 127.0.0.1:9092". */
  label: string;
  readonly address: BrokerAddress;
  /** The broker's advertised API ranges (from ApiVersions). */
  apis: ReadonlyMap<number, ApiRange> = new Map();
  /** ApiVersions version the exchange settled on. */
  apiVersionsVersion = 0;
  closed = false;
  private readonly pending = new Map<number, Pending>();
  private nextCorrelation = 1;
  private readonly head = Buffer.alloc(4);
  private headFill = 0;
  private frame: Buffer | null = null;
  private frameFill = 0;
  private readonly closeListeners: (() => void)[] = [];

  private constructor(
    private readonly socket: net.Socket,
    address: BrokerAddress,
    label: string,
    private readonly opts: ConnectionOptions,
  ) {
    this.address = address;
    this.label = label;
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', () => undefined); // 'close' follows
    socket.on('close', () => this.onClose());
  }

  /** Connects and negotiates API versions. */
  static async open(address: BrokerAddress, label: string, opts: ConnectionOptions): Promise<BrokerConnection> {
    const socket = await connectSocket(address, label, opts.connectTimeoutMs);
    const c = new BrokerConnection(socket, address, label, opts);
    try {
      const { version, apis } = await negotiateApiVersions(
        (v, body) => c.sendRaw(18, v, body, opts.requestTimeoutMs),
        { softwareName: opts.softwareName, softwareVersion: opts.softwareVersion },
        label,
      );
      c.apiVersionsVersion = version;
      c.apis = apis;
    } catch (e) {
      c.close();
      throw e;
    }
    return c;
  }

  get endpoint(): string {
    return formatAddress(this.address);
  }

  onClosed(fn: () => void): void {
    if (this.closed) fn();
    else this.closeListeners.push(fn);
  }

  /**
   * Whether the broker's flexible versions (KIP-482) are to be used. Kafka brought them with
   * ApiVersions v3 (2.4), so a broker that tops out below ApiVersions v3 has none, except
   * librdkafka's mock cluster, which advertises some (JoinGroup v6) that its handlers read as
   * non-flexible and then drops the connection. Against such a broker we stay below each API's first
   * flexible version, which changes nothing for a real Kafka of that age.
   */
  get flexibleVersions(): boolean {
    return (this.apis.get(18)?.max ?? 0) >= 3;
  }

  /** Highest version of `apiKey` both sides speak within [min, max], or undefined. */
  versionOf(apiKey: number, min?: number, max?: number): number | undefined {
    const ours = API_KEYS.get(apiKey);
    const theirs = this.apis.get(apiKey);
    if (ours === undefined || theirs === undefined) return undefined;
    const flexCap = !this.flexibleVersions && ours.flexibleMinVersion >= 0 ? ours.flexibleMinVersion - 1 : Number.MAX_SAFE_INTEGER;
    const hi = Math.min(ours.maxVersion, theirs.max, max ?? Number.MAX_SAFE_INTEGER, flexCap);
    const lo = Math.max(ours.minVersion, theirs.min, min ?? 0);
    return hi >= lo ? hi : undefined;
  }

  supports(apiKey: number, min?: number, max?: number): boolean {
    return this.versionOf(apiKey, min, max) !== undefined;
  }

  /** Like versionOf, but throws UNSUPPORTED_API naming the broker and its range. */
  version(apiKey: number, min?: number, max?: number): number {
    const v = this.versionOf(apiKey, min, max);
    if (v !== undefined) return v;
    const theirs = this.apis.get(apiKey);
    const offered = theirs === undefined ? 'does not offer it' : `offers v${theirs.min}-${theirs.max}`;
    const ours = API_KEYS.get(apiKey);
    const want = `v${Math.max(ours?.minVersion ?? 0, min ?? 0)}-${Math.min(ours?.maxVersion ?? 0, max ?? Number.MAX_SAFE_INTEGER)}`;
    throw new ClientError(
      ClientErrorCode.UNSUPPORTED_API,
      `${this.label} does not support ${apiName(apiKey)} (we speak ${want}, the broker ${offered})`,
      {
        broker: this.label,
        api: apiName(apiKey),
      },
    );
  }

  /**
   * Sends a request at the highest common version; `build` makes the body for that version.
   * Rejects with a ClientError (TIMEOUT, DISCONNECTED, PROTOCOL, UNSUPPORTED_API).
   */
  async request<T>(apiKey: number, build: (version: number) => unknown, opts: RequestOptions = {}): Promise<Response<T>> {
    const version = this.version(apiKey, opts.minVersion, opts.maxVersion);
    const body = build(version);
    const res = await this.send(
      apiKey,
      version,
      body,
      opts.timeoutMs ?? this.opts.requestTimeoutMs,
      opts.noResponse === true,
      false,
      opts.fallback,
    );
    return { version, body: res as T };
  }

  /** Throws the Kafka error `code` (when not 0) named for this broker. */
  check(code: number | undefined, api: number, subject?: string, message?: string | null): void {
    if (code === undefined || code === 0) return;
    const where: { api: string; broker: string; subject?: string; message?: string | null } = { api: apiName(api), broker: this.label };
    if (subject !== undefined) where.subject = subject;
    if (message !== undefined) where.message = message;
    throw kafkaError(code, where);
  }

  private sendRaw(apiKey: number, version: number, body: unknown, timeoutMs: number): Promise<Buffer> {
    return this.send(apiKey, version, body, timeoutMs, false, true, undefined) as Promise<Buffer>;
  }

  private send(
    apiKey: number,
    version: number,
    body: unknown,
    timeoutMs: number,
    noResponse: boolean,
    raw: boolean,
    fallback: Pending['fallback'],
  ): Promise<unknown> {
    if (this.closed) {
      return Promise.reject(
        new ClientError(ClientErrorCode.DISCONNECTED, `connection to ${this.label} is closed`, {
          broker: this.label,
          api: apiName(apiKey),
        }),
      );
    }
    const correlationId = this.nextCorrelation;
    this.nextCorrelation = this.nextCorrelation >= 0x7fffffff ? 1 : this.nextCorrelation + 1;
    let frame: Buffer;
    try {
      frame = encodeRequest({ apiKey, apiVersion: version, correlationId, clientId: this.opts.clientId }, body, { sizePrefix: true });
    } catch (e) {
      return Promise.reject(
        new ClientError(
          ClientErrorCode.PROTOCOL,
          `cannot encode ${apiName(apiKey)} v${version} for ${this.label}: ${(e as Error).message}`,
          { broker: this.label, api: apiName(apiKey), cause: e },
        ),
      );
    }
    if (noResponse) {
      return new Promise((resolve) => this.socket.write(frame, () => resolve(null)));
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(correlationId);
        reject(
          new ClientError(ClientErrorCode.TIMEOUT, `${apiName(apiKey)} to ${this.label} got no response within ${timeoutMs} ms`, {
            broker: this.label,
            api: apiName(apiKey),
          }),
        );
        this.close(); // the stream is out of step now: like Kafka's clients, start over
      }, timeoutMs);
      this.pending.set(correlationId, { apiKey, version, fallback, raw, resolve, reject, timer });
      this.socket.write(frame);
    });
  }

  private onData(chunk: Buffer): void {
    let p = 0;
    while (p < chunk.length) {
      if (this.frame === null) {
        const n = Math.min(4 - this.headFill, chunk.length - p);
        chunk.copy(this.head, this.headFill, p, p + n);
        this.headFill += n;
        p += n;
        if (this.headFill < 4) return;
        const size = this.head.readInt32BE(0);
        if (size < 4 || size > MAX_FRAME) {
          this.fail(
            new ClientError(ClientErrorCode.PROTOCOL, `${this.label} sent a response frame of ${size} bytes`, { broker: this.label }),
          );
          return;
        }
        this.frame = Buffer.allocUnsafe(size);
        this.frameFill = 0;
      }
      const frame = this.frame;
      const n = Math.min(frame.length - this.frameFill, chunk.length - p);
      chunk.copy(frame, this.frameFill, p, p + n);
      this.frameFill += n;
      p += n;
      if (this.frameFill === frame.length) {
        this.frame = null;
        this.headFill = 0;
        this.dispatch(frame);
      }
    }
  }

  private dispatch(frame: Buffer): void {
    const correlationId = frame.readInt32BE(0);
    const req = this.pending.get(correlationId);
    if (req === undefined) return; // a response to a request that timed out
    this.pending.delete(correlationId);
    clearTimeout(req.timer);
    if (req.raw) {
      req.resolve(frame);
      return;
    }
    try {
      req.resolve(decodeResponseBody(req.apiKey, req.version, frame));
    } catch (e) {
      if (req.fallback !== undefined) {
        try {
          req.resolve(req.fallback(frame.subarray(responseHeaderSize(req.apiKey, req.version, frame)), req.version));
          return;
        } catch {
          // report the codec's error below
        }
      }
      req.reject(
        new ClientError(
          ClientErrorCode.PROTOCOL,
          `cannot decode ${apiName(req.apiKey)} v${req.version} response from ${this.label}: ${(e as Error).message}`,
          { broker: this.label, api: apiName(req.apiKey), cause: e },
        ),
      );
    }
  }

  private fail(err: ClientError): void {
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      this.pending.delete(id);
      p.reject(err);
    }
    this.close();
  }

  private onClose(): void {
    const wasClosed = this.closed;
    this.closed = true;
    if (this.pending.size > 0) {
      const n = this.pending.size;
      for (const [id, p] of this.pending) {
        clearTimeout(p.timer);
        this.pending.delete(id);
        p.reject(
          new ClientError(
            ClientErrorCode.DISCONNECTED,
            `${this.label} closed the connection with ${n} request(s) outstanding (${apiName(p.apiKey)} v${p.version})`,
            { broker: this.label, api: apiName(p.apiKey) },
          ),
        );
      }
    }
    if (!wasClosed) for (const fn of this.closeListeners.splice(0)) fn();
  }

  close(): void {
    if (!this.socket.destroyed) this.socket.destroy();
    if (!this.closed) this.onClose();
  }
}
