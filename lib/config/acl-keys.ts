/**
 * The authorizer's broker keys (Kafka's names and defaults): `authorizer.class.name` turns the ACL
 * authorizer on (Kafka's AclAuthorizer and StandardAuthorizer class names name gregor's), and the two
 * keys Kafka's authorizers read from the broker config.
 */
import type { ConfigDef } from '../config.js';

const AUTHORIZER_CLASSES = [
  'kafka.security.authorizer.AclAuthorizer',
  'org.apache.kafka.metadata.authorizer.StandardAuthorizer',
  'kafka.security.auth.SimpleAclAuthorizer',
];

export const ACL_BROKER_CONFIG: Record<string, ConfigDef> = {
  'authorizer.class.name': {
    type: 'string',
    default: '',
    validate: (v) =>
      v === '' || AUTHORIZER_CLASSES.includes(String(v))
        ? undefined
        : `Invalid value ${String(v)} for configuration authorizer.class.name: gregor's ACL authorizer stands for ${AUTHORIZER_CLASSES.join(' or ')}`,
  },
  'super.users': { type: 'string', default: null },
  'allow.everyone.if.no.acl.found': { type: 'boolean', default: false },
};

/** One-line docs of the keys above (DescribeConfigs includeDocumentation). */
export const ACL_DOCS: Record<string, string> = {
  'authorizer.class.name': 'Authorizer class; any of Kafka ACL authorizers turns on ACL checks (empty: none).',
  'super.users': 'Principals (User:a;User:b) the authorizer allows everything.',
  'allow.everyone.if.no.acl.found': 'Whether a resource no ACL applies to is open to everyone.',
};
