/** Broker addresses: `host:port`, `[v6]:port`, lists separated by commas. */

export interface BrokerAddress {
  host: string;
  port: number;
}

export const DEFAULT_KAFKA_PORT = 9092;

/** Parses one address; a missing port is 9092. Throws a RangeError with the offending text. */
export function parseAddress(text: string): BrokerAddress {
  const s = text.trim().replace(/^[a-z]+:\/\//i, '');
  if (s === '') throw new RangeError('empty broker address');
  let host: string;
  let portText: string | undefined;
  if (s.startsWith('[')) {
    const close = s.indexOf(']');
    if (close < 0) throw new RangeError(`bad broker address '${text}'`);
    host = s.slice(1, close);
    const rest = s.slice(close + 1);
    if (rest !== '' && !rest.startsWith(':')) throw new RangeError(`bad broker address '${text}'`);
    portText = rest === '' ? undefined : rest.slice(1);
  } else {
    const colons = s.split(':').length - 1;
    if (colons > 1) {
      host = s; // a bare IPv6 address
    } else {
      const i = s.lastIndexOf(':');
      host = i < 0 ? s : s.slice(0, i);
      portText = i < 0 ? undefined : s.slice(i + 1);
    }
  }
  const port = portText === undefined ? DEFAULT_KAFKA_PORT : Number(portText);
  if (host === '' || !Number.isInteger(port) || port < 1 || port > 65535) throw new RangeError(`bad broker address '${text}'`);
  return { host, port };
}

/** Parses a comma-separated list (at least one address). */
export function parseBootstrap(text: string): BrokerAddress[] {
  const out = text
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '')
    .map(parseAddress);
  if (out.length === 0) throw new RangeError('no bootstrap address given');
  return out;
}

export function formatAddress(a: BrokerAddress): string {
  return a.host.includes(':') ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`;
}
