/** Config sources in Kafka's formats: Java-properties text, and KAFKA_* environment variables (the Apache image's mapping). */
import { ConfigError } from './error.js';

/** Parses Java-properties text (key=value or key: value, # and ! comments, \ continuations). */
export function parseProperties(text: string): Map<string, string> {
  const out = new Map<string, string>();
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    let line = (lines[i] ?? '').trim();
    if (line === '' || line.startsWith('#') || line.startsWith('!')) continue;
    while (line.endsWith('\\') && i + 1 < lines.length) line = line.slice(0, -1) + (lines[++i] ?? '').trim();
    const m = /^([^=:\s]+)\s*[=:\s]\s*(.*)$/.exec(line);
    if (m === null || m[1] === undefined) throw new ConfigError(`cannot parse properties line: ${line}`);
    out.set(m[1], m[2] ?? '');
  }
  return out;
}

/** KAFKA_FOO_BAR → foo.bar with the Apache image's escapes: ___ → -, __ → _, _ → . */
export function envKeyToConfigKey(envName: string): string {
  return envName
    .slice('KAFKA_'.length)
    .toLowerCase()
    .split('___')
    .map((dashed) =>
      dashed
        .split('__')
        .map((part) => part.replace(/_/g, '.'))
        .join('_'),
    )
    .join('-');
}

/** Environment variables that are not configs even though they start with KAFKA_. */
export const ENV_IGNORED = new Set([
  'KAFKA_HEAP_OPTS',
  'KAFKA_OPTS',
  'KAFKA_JMX_OPTS',
  'KAFKA_LOG4J_OPTS',
  'KAFKA_DEBUG',
  'KAFKA_VERSION',
  'KAFKA_HOME',
]);
