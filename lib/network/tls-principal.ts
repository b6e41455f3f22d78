/**
 * The principal of a client certificate, as Kafka's default SSL principal builder makes it: the
 * subject's X.500 name in RFC 2253 form (most specific RDN first: `CN=app,OU=eng,O=acme,C=US`), passed
 * through `ssl.principal.mapping.rules` (DEFAULT keeps it; `RULE:pattern/replacement/[LU]` rewrites a
 * name the pattern matches whole), then `User:<name>`. Without a certificate: User:ANONYMOUS.
 */
import type { X509Certificate } from 'node:crypto';
import { ConfigError } from '../config/error.js';

export const ANONYMOUS = 'User:ANONYMOUS';

type Rule = { kind: 'default' } | { kind: 'rule'; pattern: RegExp; replacement: string; toCase: '' | 'L' | 'U' };

/** Parses ssl.principal.mapping.rules (comma-separated DEFAULT / RULE:p/r/[LU] entries). */
export function parseMappingRules(text: string): Rule[] {
  const rules: Rule[] = [];
  const re = /\s*(?:(DEFAULT)|RULE:((?:\\\/|[^/])*)\/((?:\\\/|[^/])*)\/([LU]?))\s*(?:,|$)/y;
  let at = 0;
  const s = text.trim();
  while (at < s.length) {
    re.lastIndex = at;
    const m = re.exec(s);
    if (m === null || m[0] === '') throw new ConfigError(`ssl.principal.mapping.rules: invalid rule at '${s.slice(at)}'`);
    if (m[1] !== undefined) rules.push({ kind: 'default' });
    else {
      const unescape = (x: string): string => x.replace(/\\\//g, '/');
      let pattern: RegExp;
      try {
        pattern = new RegExp(`^(?:${unescape(m[2] ?? '')})$`);
      } catch (e) {
        throw new ConfigError(`ssl.principal.mapping.rules: bad pattern ${m[2] ?? ''}: ${(e as Error).message}`);
      }
      rules.push({ kind: 'rule', pattern, replacement: unescape(m[3] ?? ''), toCase: (m[4] ?? '') as '' | 'L' | 'U' });
    }
    at = re.lastIndex;
  }
  return rules.length === 0 ? [{ kind: 'default' }] : rules;
}

/** A distinguished name value escaped as RFC 2253 asks. */
function escapeValue(v: string): string {
  let out = v.replace(/[\\,+"<>;=]/g, (c) => `\\${c}`);
  if (out.startsWith('#') || out.startsWith(' ')) out = `\\${out}`;
  if (out.endsWith(' ') && out.length > 1) out = `${out.slice(0, -1)}\\ `;
  return out;
}

/** The subject of a certificate in RFC 2253 order (Node lists the RDNs in certificate order, one a line). */
export function rfc2253Subject(cert: X509Certificate): string {
  const rdns = cert.subject.split('\n').filter((l) => l !== '');
  return rdns
    .reverse()
    .map((rdn) => {
      const eq = rdn.indexOf('=');
      return eq < 0 ? rdn : `${rdn.slice(0, eq)}=${escapeValue(rdn.slice(eq + 1))}`;
    })
    .join(',');
}

/** The name the first matching rule gives `dn` (Kafka: no rule matches -> the DN unchanged). */
export function mapPrincipalName(dn: string, rules: readonly Rule[]): string {
  for (const r of rules) {
    if (r.kind === 'default') return dn;
    if (!r.pattern.test(dn)) continue;
    const name = dn.replace(r.pattern, r.replacement);
    return r.toCase === 'L' ? name.toLowerCase() : r.toCase === 'U' ? name.toUpperCase() : name;
  }
  return dn;
}

/** The connection's principal from its peer certificate (none: ANONYMOUS). */
export function principalOf(cert: X509Certificate | undefined, rules: readonly Rule[]): string {
  return cert === undefined ? ANONYMOUS : `User:${mapPrincipalName(rfc2253Subject(cert), rules)}`;
}

export type { Rule as PrincipalRule };
