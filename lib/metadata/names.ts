/** Topic and cluster ids, and Kafka's rules for topic names. */
import { random16 } from '../random-id.js';

const LEGAL_TOPIC = /^[a-zA-Z0-9._-]+$/;
export const MAX_TOPIC_NAME_LENGTH = 249;

export function newTopicId(): string {
  let id: string;
  do id = random16().toString('hex');
  while (/^0+$/.test(id));
  return id;
}

/** Kafka's cluster ids: 16 random bytes, URL-safe base64 without padding (22 chars). */
export function newClusterId(): string {
  return random16().toString('base64url');
}

/** Returns why a topic name is invalid, or undefined when it is valid (Kafka's Topic.validate). */
export function invalidTopicName(name: string): string | undefined {
  if (name.length === 0) return 'Topic name is empty';
  if (name === '.' || name === '..') return `Topic name cannot be "${name}"`;
  if (name.length > MAX_TOPIC_NAME_LENGTH) return `Topic name is longer than ${MAX_TOPIC_NAME_LENGTH} characters`;
  if (!LEGAL_TOPIC.test(name)) return `Topic name "${name}" contains characters other than ASCII alphanumerics, '.', '_' and '-'`;
  return undefined;
}
