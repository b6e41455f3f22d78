/** What every SASL mechanism's server side offers the connection's session (lib/security/sasl/session.ts). */

export interface SaslMechanismServer {
  readonly mechanism: string;
  /** Takes the client's next token and returns the server's answer (possibly empty); throws SaslError. */
  evaluate(token: Buffer): Buffer;
  /** The exchange succeeded: authorizationId is the authenticated user. */
  readonly complete: boolean;
  readonly authorizationId: string;
  /** When the credential stops being valid (OAUTHBEARER's token exp), ms since the epoch. */
  readonly credentialExpiresAtMs?: number | undefined;
}

/**
 * A failed exchange. `message` goes to the client (SaslAuthenticate's error message), as Kafka sends
 * it: its own wording for the failures it names (PLAIN's "Invalid username or password"), one generic
 * line for SCRAM's, so that a client cannot learn whether a user exists; `detail` is for the log only.
 */
export class SaslError extends Error {
  constructor(
    message: string,
    readonly detail: string = message,
  ) {
    super(message);
    this.name = 'SaslError';
  }

  /** Kafka's answer to invalid credentials (its SaslException path): it names the mechanism only. */
  static invalid(mechanism: string, detail: string): SaslError {
    return new SaslError(`Authentication failed during authentication due to invalid credentials with SASL mechanism ${mechanism}`, detail);
  }
}
