/**
 * Responses sent straight to a plain TCP socket's descriptor (gregor.socket.write.direct): one
 * sendmsg(2) of the response's buffers from the addon (native/pread: sendNowait), when nothing of the
 * connection's waits in Node's stream. Node's own path for the same bytes makes the same system call,
 * but runs its Writable machinery around it first (write, _write, writeOrBuffer, a WriteWrap, the
 * stream's length bookkeeping, a tick for the callback): on a small response, about a third of what
 * the call itself costs in the kernel on loopback. Whatever the kernel does not
 * take (its buffer filled) goes through the stream as before, which then owns the order of
 * everything after it: a response goes direct only while the stream holds nothing.
 */
import { loadAddon } from '../../protocol/records/native-addon.js';

interface SendAddon {
  /** bytes sent (all, or fewer when the socket's buffer filled), or -errno (-EAGAIN: the buffer is full) */
  sendNowait?: (fd: number, buffers: readonly Uint8Array[]) => number;
}

export type SendNowait = NonNullable<SendAddon['sendNowait']>;

let sendNowait: SendNowait | null | undefined;

/** The addon's sendNowait, or null (no addon, or a build without it): responses then all go through the stream. */
export function sendNowaitCall(): SendNowait | null {
  if (sendNowait === undefined) sendNowait = loadAddon<SendAddon>('pread').addon?.sendNowait ?? null;
  return sendNowait;
}

/** Responses sent whole by one sendNowait, those it sent in part (the rest through the stream), and its bytes. */
export const directWrites = { whole: 0, partial: 0, bytes: 0 };
