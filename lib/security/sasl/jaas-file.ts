/**
 * A static JAAS file, as a Kafka broker reads one when the JVM is started with
 * `-Djava.security.auth.login.config=<file>` (in KAFKA_OPTS): sections `Name { <login module entries> };`.
 * A SASL listener's mechanism without `listener.name.<l>.<mechanism>.sasl.jaas.config` takes its login
 * module from the section `<listener lowercase>.KafkaServer`, else `KafkaServer` (Kafka's
 * JaasContext.loadServerContext), the entry whose class is the mechanism's login module.
 */
import { readFileSync } from 'node:fs';
import { ConfigError } from '../../config/error.js';
import { type JaasEntry, parseJaasModules, tokenizeJaas } from './jaas.js';

export const JAAS_FILE_PROPERTY = 'java.security.auth.login.config';
export const SERVER_CONTEXT = 'KafkaServer';

/**
 * The JAAS file named by `-Djava.security.auth.login.config=<file>` in KAFKA_OPTS (the last one wins, as
 * java's own parsing; `==` is Java's "this file only", the same here), or undefined.
 */
export function jaasFileFromOpts(opts: string | undefined): string | undefined {
  let file: string | undefined;
  const re = /-Djava\.security\.auth\.login\.config==?("([^"]*)"|'([^']*)'|(\S+))/g;
  for (const m of (opts ?? '').matchAll(re)) file = m[2] ?? m[3] ?? m[4];
  return file === undefined || file === '' ? undefined : file;
}

/** The sections of a JAAS file's text by name (`where` names it in errors). */
export function parseJaasFile(text: string, where: string): Map<string, JaasEntry[]> {
  const toks = tokenizeJaas(text, where, true);
  const sections = new Map<string, JaasEntry[]>();
  const bad = (what: string): ConfigError => new ConfigError(`${where}: invalid JAAS file: ${what}`);
  let i = 0;
  while (i < toks.length) {
    const name = toks[i++];
    if (name === undefined || name.quoted || '=;{}'.includes(name.t)) throw bad('expected a section name');
    if (toks[i]?.t !== '{' || toks[i]?.quoted === true) throw bad(`expected '{' after ${name.t}`);
    const { entries, next } = parseJaasModules(toks, i + 1, `${where} (section ${name.t})`, '}');
    i = next + 1;
    if (toks[i]?.t === ';' && toks[i]?.quoted === false) i++;
    else throw bad(`expected ';' after the '}' of ${name.t}`);
    if (sections.has(name.t)) throw bad(`section ${name.t} appears twice`);
    sections.set(name.t, entries);
  }
  return sections;
}

/** Reads and parses the JAAS file `file` (read at start); a missing or bad file is a ConfigError. */
export function readJaasFile(file: string): Map<string, JaasEntry[]> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new ConfigError(`${JAAS_FILE_PROPERTY}=${file}: cannot read the JAAS file (${(e as Error).message})`);
  }
  return parseJaasFile(text, `JAAS file ${file}`);
}

/** The server section for `listener`: `<listener lowercase>.KafkaServer`, else `KafkaServer`. */
export function serverSection(sections: ReadonlyMap<string, JaasEntry[]>, listener: string): JaasEntry[] | undefined {
  return sections.get(`${listener.toLowerCase()}.${SERVER_CONTEXT}`) ?? sections.get(SERVER_CONTEXT);
}
