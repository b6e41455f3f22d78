/**
 * Reads a plain TCP socket into buffers we choose (Node's `onread` user-buffer mode) instead of
 * through its Readable stream. Node's default path allocates a 64 KB buffer per read, shrinks it to
 * what was read, and sends it through Readable.push, 'data' and a maybeReadMore tick; a 1 MB produce
 * request then costs ~16 such reads and one more copy of every byte into the frame. Here libuv reads
 * straight into the frame being assembled (as much as the kernel holds, up to what the frame still
 * lacks), and anything else into one shared 64 KB buffer, copied out at once (see `scratch`).
 *
 * Node offers `onread` to client sockets only (net.connect, new net.Socket), not to the sockets a
 * net.Server accepts, so it is switched on here through the socket's own fields (found by their symbol
 * names) and its handle's useUserBuffer; where they are missing (another Node, a TLS socket) nothing
 * changes and the caller keeps its 'data' listener. Flow control stays socket.pause()/resume(), which
 * in this mode stop and start the handle's reads.
 */
import type { Socket } from 'node:net';

/** Where the next read lands: the unfilled tail of the frame being assembled, or null for the shared read buffer. */
export type NextTarget = () => Buffer | null;
/** `n` bytes were read into `buf` from its start (the frame's tail that nextTarget gave, or a Buffer of exactly `n` bytes). */
export type OnRead = (buf: Buffer, n: number) => void;

const SCRATCH_BYTES = 64 * 1024;
/**
 * The buffer every connection's reads land in when they do not go into a frame. Each read's bytes are
 * copied out at once into a Buffer of their own size (as Node's stream path shrinks its read buffer),
 * so nothing handed on keeps a larger buffer alive (the log's recent-batches cache holds produced
 * batches as views). One suffices for all: libuv delivers reads one at a time on this thread, and
 * each is copied out before its callback returns.
 */
let scratch: Buffer | null = null;

interface UserBufferHandle {
  useUserBuffer(buf: Uint8Array): void;
}

function symbolOf(o: object, name: string): symbol | undefined {
  return Object.getOwnPropertySymbols(o).find((s) => s.description === name);
}

/**
 * Switches `socket` (a plain net.Socket, not yet read from with a pending buffer of ours) to reading
 * into the buffers `next` names, with `onRead` for every read. False (nothing changed) if this Node's
 * socket lacks what that needs.
 */
export function readDirect(socket: Socket, next: NextTarget, onRead: OnRead): boolean {
  const kBuffer = symbolOf(socket, 'kBuffer');
  const kBufferCb = symbolOf(socket, 'kBufferCb');
  const kBufferGen = symbolOf(socket, 'kBufferGen');
  const handle = (socket as unknown as { _handle?: Partial<UserBufferHandle> | null })._handle;
  if (kBuffer === undefined || kBufferCb === undefined || kBufferGen === undefined) return false;
  if (handle === null || handle === undefined || typeof handle.useUserBuffer !== 'function') return false;
  const fields = socket as unknown as Record<symbol, unknown>;
  if (fields[kBuffer] !== null || fields[kBufferCb] !== null || fields[kBufferGen] !== null) return false;
  // bytes already read through the stream would be passed over: those stay on the stream path
  if (socket.readableLength > 0) return false;

  const choose = (): Buffer => {
    const frame = next();
    if (frame !== null && frame.length > 0) return frame;
    scratch ??= Buffer.allocUnsafe(SCRATCH_BYTES);
    return scratch;
  };
  const first = choose();
  fields[kBuffer] = first;
  // Node calls this after every read with the buffer it read into; the generator then names the next
  fields[kBufferCb] = (n: number, buf: Buffer): void => {
    if (buf !== scratch) {
      onRead(buf, n);
      return;
    }
    const own = Buffer.allocUnsafe(n);
    buf.copy(own, 0, 0, n);
    onRead(own, n);
  };
  fields[kBufferGen] = choose;
  (handle as UserBufferHandle).useUserBuffer(first);
  return true;
}
