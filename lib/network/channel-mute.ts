/**
 * A connection muted for a client quota's throttle time (KIP-219): Kafka sends the response, then
 * reads nothing from the channel until the throttle time has passed. While muted, the connection
 * frames and dispatches nothing (bytes the client sends wait in the socket and the kernel).
 */
export class ChannelMute {
  private timer: NodeJS.Timeout | undefined;
  private until = 0;

  /** `onEnd` runs when the mute ends (the connection then reads and dispatches again). */
  constructor(private readonly onEnd: () => void) {}

  get muted(): boolean {
    return this.timer !== undefined;
  }

  /** Mutes for `ms` from now (extends a shorter mute; never shortens one). */
  mute(ms: number): void {
    const until = Date.now() + ms;
    if (ms <= 0 || until <= this.until) return;
    this.until = until;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.until = 0;
      this.onEnd();
    }, ms);
  }

  /** The connection closed: no more wake-ups. */
  clear(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
