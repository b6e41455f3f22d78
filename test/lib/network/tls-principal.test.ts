import { expect } from 'chai';
import { mapPrincipalName, parseMappingRules } from '../../../lib/network/tls-principal.js';
import { mapCipherSuites, normalizePem } from '../../../lib/network/tls.js';

describe('SSL principal mapping and cipher suite names', () => {
  const dn = 'CN=app,OU=eng,O=acme,C=US';

  it('DEFAULT keeps the RFC 2253 name; RULE rewrites a name its pattern matches whole, with L/U', () => {
    expect(mapPrincipalName(dn, parseMappingRules('DEFAULT'))).to.equal(dn);
    expect(mapPrincipalName(dn, parseMappingRules('RULE:^CN=(.*?),OU=(.*?),O=(.*?),C=(.*?)$/$1@$2/L, DEFAULT'))).to.equal('app@eng');
    expect(mapPrincipalName(dn, parseMappingRules('RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT'))).to.equal(dn); // no match: next rule
    expect(mapPrincipalName(dn, parseMappingRules('RULE:^CN=([^,]*).*$/$1/U'))).to.equal('APP');
    expect(mapPrincipalName(dn, parseMappingRules('RULE:^CN=(.*?),O.*$/x\\/$1/'))).to.equal('x/app');
    expect(() => parseMappingRules('RULE:broken')).to.throw(/ssl.principal.mapping.rules/);
  });

  it('maps IANA TLS 1.2 suite names to OpenSSL ones and keeps TLS 1.3 suites apart', () => {
    expect(
      mapCipherSuites([
        'TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256',
        'TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384',
        'TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256',
        'TLS_DHE_RSA_WITH_AES_256_GCM_SHA384',
        'TLS_AES_128_GCM_SHA256',
        'ECDHE-RSA-AES256-SHA384',
      ]),
    ).to.deep.equal({
      ciphers:
        'ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-CHACHA20-POLY1305:DHE-RSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-SHA384',
      ciphersuites: 'TLS_AES_128_GCM_SHA256',
    });
    expect(mapCipherSuites([])).to.deep.equal({});
  });

  it('re-wraps inline PEM given on one line', () => {
    const body = 'A'.repeat(70);
    expect(normalizePem(`-----BEGIN CERTIFICATE----- ${body.slice(0, 30)} ${body.slice(30)} -----END CERTIFICATE-----`)).to.equal(
      `-----BEGIN CERTIFICATE-----\n${'A'.repeat(64)}\nAAAAAA\n-----END CERTIFICATE-----\n`,
    );
  });
});
