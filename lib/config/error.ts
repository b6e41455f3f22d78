/** The error of a bad broker or topic config (GREGOR_ERR_CONFIG), naming the key. */
export class ConfigError extends Error {
  readonly code = 'GREGOR_ERR_CONFIG';
  constructor(message: string) {
    super(`GREGOR_ERR_CONFIG: ${message}`);
    this.name = 'ConfigError';
  }
}
