/** What every command implementation gets: output, notices, and the protocol client made from the options. */
import { readFileSync } from 'node:fs';
import { parseBootstrap, type BrokerAddress } from '../client/address.js';
import { KafkaClient } from '../client/client.js';
import { UsageError } from './errors.js';
import { Output, type OutputFormat } from './output.js';

export interface ConnectionFlags {
  bootstrap: string;
  clientId: string;
  requestTimeout: number;
}

let version: string | undefined;

/** This package's version (for ApiVersions' client software version). */
export function packageVersion(): string {
  if (version === undefined) {
    try {
      const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version?: string };
      version = pkg.version ?? '0.0.0';
    } catch {
      version = '0.0.0';
    }
  }
  return version;
}

export class Context {
  readonly out: Output;
  private made: KafkaClient | null = null;

  constructor(
    readonly format: OutputFormat,
    private readonly conn: ConnectionFlags | null,
    out?: Output,
  ) {
    this.out = out ?? new Output();
  }

  get json(): boolean {
    return this.format === 'json';
  }

  /** The client for -b/--bootstrap (made on first use; `timeouts` apply to that first call only). */
  client(timeouts: { requestTimeoutMs?: number; connectTimeoutMs?: number } = {}): KafkaClient {
    if (this.made !== null) return this.made;
    if (this.conn === null) throw new Error('this command takes no connection options');
    let bootstrap: BrokerAddress[];
    try {
      bootstrap = parseBootstrap(this.conn.bootstrap);
    } catch (e) {
      throw new UsageError(`-b/--bootstrap: ${(e as Error).message}`);
    }
    this.made = new KafkaClient({
      bootstrap,
      clientId: this.conn.clientId,
      requestTimeoutMs: timeouts.requestTimeoutMs ?? this.conn.requestTimeout,
      connectTimeoutMs: timeouts.connectTimeoutMs ?? Math.min(this.conn.requestTimeout, 10000),
      softwareName: 'gregor-cli',
      softwareVersion: packageVersion(),
    });
    return this.made;
  }

  /** A notice on stderr (kcat's "% " prefix): progress facts that are not the command's result. */
  notice(message: string): void {
    process.stderr.write(`% ${message}\n`);
  }

  close(): void {
    this.made?.close();
    this.made = null;
  }
}
