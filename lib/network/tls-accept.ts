/**
 * The TLS side of an SSL listener's accepted socket: the server handshake (Node's tls over the TCP
 * socket), the client certificate check of ssl.client.auth, and the connection's principal. Failed
 * handshakes (a plaintext client, no shared protocol or cipher, a missing or untrusted client
 * certificate) close the socket before any request is read, with one rate-limited line per class.
 */
import type { X509Certificate } from 'node:crypto';
import type net from 'node:net';
import tls from 'node:tls';
import type { RateLimitedLog } from './rate-limited-log.js';
import { principalOf } from './tls-principal.js';
import type { TlsListenerSettings } from './tls.js';

/** The class of a handshake failure, from OpenSSL's error code (one log line per class and interval). */
export function handshakeFailureClass(code: string | undefined): string {
  switch (code) {
    case 'ERR_SSL_WRONG_VERSION_NUMBER':
    case 'ERR_SSL_HTTP_REQUEST':
    case 'ERR_SSL_PACKET_LENGTH_TOO_LONG':
    case 'ERR_SSL_RECORD_LENGTH_MISMATCH':
      return 'plaintext client on an SSL listener';
    case 'ERR_SSL_PEER_DID_NOT_RETURN_A_CERTIFICATE':
      return 'client certificate missing (ssl.client.auth=required)';
    case 'ERR_SSL_UNSUPPORTED_PROTOCOL':
    case 'ERR_SSL_NO_PROTOCOLS_AVAILABLE':
    case 'ERR_SSL_VERSION_TOO_LOW':
    case 'ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION':
      return 'no TLS version in common (ssl.enabled.protocols)';
    case 'ERR_SSL_NO_SHARED_CIPHER':
      return 'no cipher suite in common (ssl.cipher.suites)';
    default:
      return 'TLS handshake failed';
  }
}

/** OpenSSL's verification result of the peer certificate (null: verified); Node keeps it on the TLS handle. */
function verifyError(socket: tls.TLSSocket): string | null {
  const handle = (socket as unknown as { _handle?: { verifyError?: () => Error | null } })._handle;
  if (handle?.verifyError === undefined) return 'UNVERIFIED';
  const e: (Error & { code?: string }) | null = handle.verifyError();
  return e === null ? null : (e.code ?? e.message);
}

/**
 * Runs the server handshake on `raw`; calls `onSecure` with the TLS socket and its principal once
 * the handshake (and the client certificate check) passed. Anything else closes the socket.
 */
export function acceptTls(
  raw: net.Socket,
  settings: TlsListenerSettings,
  handshakeTimeoutMs: number,
  log: RateLimitedLog,
  onSecure: (socket: tls.TLSSocket, principal: string) => void,
): void {
  const remote = { remoteAddress: raw.remoteAddress, remotePort: raw.remotePort };
  const socket = new tls.TLSSocket(raw, {
    isServer: true,
    secureContext: settings.secureContext,
    requestCert: settings.clientAuth !== 'none',
    // with requestCert: a client without a certificate fails the handshake (Node's FAIL_IF_NO_PEER_CERT)
    rejectUnauthorized: settings.clientAuth === 'required',
  });
  let done = false;
  const timer =
    handshakeTimeoutMs > 0
      ? setTimeout(() => {
          if (done) return;
          done = true;
          log.warn('TLS handshake timed out', { ...remote, timeoutMs: handshakeTimeoutMs }, 'TLS handshake timed out: connection closed');
          socket.destroy();
        }, handshakeTimeoutMs)
      : undefined;
  socket.on('error', (err: NodeJS.ErrnoException) => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    const cls = handshakeFailureClass(err.code);
    log.warn(cls, { ...remote, code: err.code, err: err.message }, `${cls}: connection closed`);
    socket.destroy();
  });
  socket.once('secure', () => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    const cert: X509Certificate | undefined = socket.getPeerX509Certificate();
    if (cert !== undefined) {
      const bad = verifyError(socket);
      if (bad !== null) {
        log.warn(
          'client certificate refused',
          { ...remote, reason: bad, subject: cert.subject.replace(/\n/g, ',') },
          'client certificate refused: connection closed',
        );
        socket.destroy();
        return;
      }
    }
    onSecure(socket, principalOf(cert, settings.principalRules));
  });
}
