/**
 * connections.max.idle.ms for one connection. Node's socket.setTimeout re-arms its timer on every
 * read and write (a TLS socket reads in 16 KB chunks: 64 timer moves per 1 MB request); here
 * activity only stamps a time, and the one timer, when it fires, sleeps again for what is left of
 * the idle time since the last stamp, or reports idleness.
 */
export class IdleTimer {
  private last = performance.now();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly ms: number,
    private readonly onIdle: () => void,
  ) {
    this.arm(ms);
  }

  /** Socket activity (a read, a write, a drain). */
  touch(): void {
    this.last = performance.now();
  }

  /** Idle time counts again from now (after onIdle decided the connection is not idle). */
  restart(): void {
    this.touch();
    if (this.timer === null) this.arm(this.ms);
  }

  stop(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  private arm(ms: number): void {
    // like a socket's timeout, it does not keep the process alive
    this.timer = setTimeout(this.check, Math.max(1, Math.ceil(ms))).unref();
  }

  private readonly check = (): void => {
    this.timer = null;
    const left = this.ms - (performance.now() - this.last);
    if (left > 0) this.arm(left);
    else this.onIdle();
  };
}
