/**
 * The `sasl.jaas.config` format: `<login module class> <required|requisite|sufficient|optional>
 * [name=value ...];`, values bare or double-quoted (backslash escapes). Kafka takes exactly one login
 * module per value.
 */
import { ConfigError } from '../../config/error.js';

export interface JaasEntry {
  loginModule: string;
  flag: string;
  options: Map<string, string>;
}

const FLAGS = new Set(['required', 'requisite', 'sufficient', 'optional']);

export interface JaasToken {
  t: string;
  quoted: boolean;
}

/**
 * Tokens: bare words, quoted strings (unescaped), '=' and ';'; with `file`, also '{', '}' and the
 * `//` and `/* *\/` comments of a JAAS file.
 */
export function tokenizeJaas(text: string, key: string, file = false): JaasToken[] {
  const out: JaasToken[] = [];
  const punct = file ? '=;{}' : '=;';
  const bare = file ? /^[^\s=;"{}]+/ : /^[^\s=;"]+/;
  let i = 0;
  while (i < text.length) {
    const c = text[i] ?? '';
    if (/\s/.test(c)) i++;
    else if (file && text.startsWith('//', i)) {
      const end = text.indexOf('\n', i);
      i = end < 0 ? text.length : end + 1;
    } else if (file && text.startsWith('/*', i)) {
      const end = text.indexOf('*/', i + 2);
      if (end < 0) throw new ConfigError(`${key}: unterminated comment`);
      i = end + 2;
    } else if (punct.includes(c)) {
      out.push({ t: c, quoted: false });
      i++;
    } else if (c === '"') {
      let s = '';
      i++;
      for (;;) {
        if (i >= text.length) throw new ConfigError(`${key}: unterminated quoted value`);
        const d = text[i++] ?? '';
        if (d === '"') break;
        s += d === '\\' && i < text.length ? (text[i++] ?? '') : d;
      }
      out.push({ t: s, quoted: true });
    } else {
      const m = bare.exec(text.slice(i));
      const w = m?.[0] ?? c;
      out.push({ t: w, quoted: false });
      i += w.length;
    }
  }
  return out;
}

/**
 * Parses login module entries from `toks[start]` up to the end, or (with `end`) up to that token,
 * and returns them with the index after the last entry.
 */
export function parseJaasModules(
  toks: readonly JaasToken[],
  start: number,
  key: string,
  end?: string,
): { entries: JaasEntry[]; next: number } {
  const entries: JaasEntry[] = [];
  let i = start;
  const bad = (what: string): ConfigError => new ConfigError(`${key}: invalid JAAS config: ${what}`);
  while (i < toks.length && !(end !== undefined && toks[i]?.t === end && toks[i]?.quoted === false)) {
    const mod = toks[i++];
    const flag = toks[i++];
    if (mod === undefined || mod.quoted || '=;{}'.includes(mod.t)) throw bad('expected a login module class');
    if (flag === undefined || !FLAGS.has(flag.t.toLowerCase())) throw bad(`expected a control flag after ${mod.t}`);
    const options = new Map<string, string>();
    for (;;) {
      const name = toks[i++];
      if (name === undefined) throw bad(`missing ';' after the options of ${mod.t}`);
      if (name.t === ';' && !name.quoted) break;
      if (toks[i]?.t !== '=' || toks[i]?.quoted === true) throw bad(`expected '=' after ${name.t}`);
      const value = toks[i + 1];
      if (value === undefined || (!value.quoted && (value.t === ';' || value.t === '='))) throw bad(`expected a value for ${name.t}`);
      options.set(name.t, value.t);
      i += 2;
    }
    entries.push({ loginModule: mod.t, flag: flag.t.toLowerCase(), options });
  }
  if (end !== undefined && i >= toks.length) throw bad(`missing '${end}'`);
  return { entries, next: i };
}

/** Parses a sasl.jaas.config value (`key` names it in errors); exactly one login module. */
export function parseJaasConfig(text: string, key: string): JaasEntry {
  const { entries } = parseJaasModules(tokenizeJaas(text, key), 0, key);
  if (entries.length !== 1)
    throw new ConfigError(`${key}: invalid JAAS config: it holds ${entries.length} login modules; Kafka takes exactly one`);
  return entries[0]!;
}

export const LOGIN_MODULES = {
  PLAIN: 'org.apache.kafka.common.security.plain.PlainLoginModule',
  SCRAM: 'org.apache.kafka.common.security.scram.ScramLoginModule',
  OAUTHBEARER: 'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule',
} as const;

/** PLAIN's users: the `user_<name>` options of a PlainLoginModule entry. */
export function plainUsers(entry: JaasEntry | undefined): Map<string, string> {
  const users = new Map<string, string>();
  if (entry === undefined || entry.loginModule !== LOGIN_MODULES.PLAIN) return users;
  for (const [k, v] of entry.options) if (k.startsWith('user_') && k.length > 5) users.set(k.slice(5), v);
  return users;
}
