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

/** Tokens: bare words, quoted strings (unescaped), '=' and ';'. */
function tokenize(text: string, key: string): { t: string; quoted: boolean }[] {
  const out: { t: string; quoted: boolean }[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i] ?? '';
    if (/\s/.test(c)) i++;
    else if (c === '=' || c === ';') {
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
      const m = /^[^\s=;"]+/.exec(text.slice(i));
      const w = m?.[0] ?? c;
      out.push({ t: w, quoted: false });
      i += w.length;
    }
  }
  return out;
}

/** Parses a sasl.jaas.config value (`key` names it in errors); exactly one login module. */
export function parseJaasConfig(text: string, key: string): JaasEntry {
  const toks = tokenize(text, key);
  const entries: JaasEntry[] = [];
  let i = 0;
  const bad = (what: string): ConfigError => new ConfigError(`${key}: invalid JAAS config: ${what}`);
  while (i < toks.length) {
    const mod = toks[i++];
    const flag = toks[i++];
    if (mod === undefined || mod.quoted || mod.t === ';' || mod.t === '=') throw bad('expected a login module class');
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
  if (entries.length !== 1) throw bad(`it holds ${entries.length} login modules; Kafka takes exactly one`);
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
