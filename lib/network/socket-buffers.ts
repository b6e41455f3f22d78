/**
 * socket.send.buffer.bytes / socket.receive.buffer.bytes: SO_SNDBUF / SO_RCVBUF through the tiny
 * native addon in native/sockopt (Node has no API for them). If the addon is missing the broker
 * still runs: one warning, and the options are left at the OS defaults.
 */
import type { Socket, Server } from 'node:net';
import { loadAddon, type AddonLoad } from '../../protocol/records/native-addon.js';
import type { Logger } from '../observability/logger.js';

export interface SockoptAddon {
  setBufferSizes(fd: number, snd: number, rcv: number): void;
  getBufferSizes(fd: number): { snd: number; rcv: number };
}

let loaded: AddonLoad<SockoptAddon> | undefined;
let warned = false;

function load(): AddonLoad<SockoptAddon> {
  return (loaded ??= loadAddon<SockoptAddon>('sockopt'));
}

/** The addon, or null if it did not build / load. */
export function sockoptAddon(): SockoptAddon | null {
  return load().addon;
}

/** Why the addon is unavailable (null when it loaded). */
export function sockoptLoadError(): string | null {
  return load().error;
}

/** The OS file descriptor behind a net.Socket / net.Server (Linux, macOS), or null. */
export function socketFd(s: Socket | Server): number | null {
  const fd = (s as unknown as { _handle?: { fd?: unknown } | null })._handle?.fd;
  return typeof fd === 'number' && fd >= 0 ? fd : null;
}

/**
 * Applies the sizes (-1 = leave the OS default) to a socket. Returns true if they were applied
 * (or nothing was asked); false if the addon is missing (warned once per process) or the call failed.
 */
export function applyBufferSizes(s: Socket | Server, snd: number, rcv: number, logger: Logger): boolean {
  if (snd < 0 && rcv < 0) return true;
  const addon = sockoptAddon();
  if (addon === null) {
    if (!warned) {
      warned = true;
      logger.warn(
        { reason: sockoptLoadError() },
        'socket.send.buffer.bytes / socket.receive.buffer.bytes not applied: sockopt addon unavailable',
      );
    }
    return false;
  }
  const fd = socketFd(s);
  if (fd === null) return false;
  try {
    addon.setBufferSizes(fd, snd, rcv);
    return true;
  } catch (err) {
    logger.debug({ err: (err as Error).message }, 'setsockopt failed');
    return false;
  }
}

/** getsockopt(SO_SNDBUF / SO_RCVBUF) for a socket, or null without the addon / fd. */
export function readBufferSizes(s: Socket | Server): { snd: number; rcv: number } | null {
  const addon = sockoptAddon();
  const fd = socketFd(s);
  if (addon === null || fd === null) return null;
  return addon.getBufferSizes(fd);
}
