/**
 * Reads a plain TCP socket into buffers we choose (Node's `onread` user-buffer mode) instead of
 * through its Readable stream. Node's default path allocates a 64 KB buffer per read, shrinks it to
 * what was read, and sends it through Readable.push, 'data' and a maybeReadMore tick; a 1 MB produce
 * request then costs ~16 such reads and one more copy of every byte into the frame. Here libuv reads
 * straight into the frame being assembled (as much as the kernel holds, up to what the frame still
 * lacks), and anything else into successive slices of a 64 KB slab, handed on as views.
 *
 * Node offers `onread` to client sockets only (net.connect, new net.Socket), not to the sockets a
 * net.Server accepts, so it is switched on here through the socket's own fields (found by their symbol
 * names) and its handle's useUserBuffer; where they are missing (another Node, a TLS socket) nothing
 * changes and the caller keeps its 'data' listener. Flow control stays socket.pause()/resume(), which
 * in this mode stop and start the handle's reads.
 */
import type { Socket } from 'node:net';

/** Where the next read lands: a slice of the frame being assembled, or null for the slab. */
export type NextTarget = () => Buffer | null;
/** `n` bytes were read into `buf` (the Buffer that nextTarget or the slab gave, from its start). */
export type OnRead = (buf: Buffer, n: number) => void;

const SLAB_BYTES = 64 * 1024;
/** a slab with less room than this is left for a new one (a read that small would cost a syscall for little) */
const MIN_SLAB_ROOM = 4 * 1024;

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

  let slab = Buffer.allocUnsafe(SLAB_BYTES);
  let slabUsed = 0;
  /** the Buffer registered for the next read, and whether it is a slab slice */
  let current: Buffer;
  let currentIsSlab: boolean;
  const choose = (): Buffer => {
    const frame = next();
    if (frame !== null && frame.length > 0) {
      current = frame;
      currentIsSlab = false;
    } else {
      if (SLAB_BYTES - slabUsed < MIN_SLAB_ROOM) {
        slab = Buffer.allocUnsafe(SLAB_BYTES);
        slabUsed = 0;
      }
      current = slab.subarray(slabUsed);
      currentIsSlab = true;
    }
    return current;
  };
  const first = choose();
  fields[kBuffer] = first;
  // Node calls this after every read with the buffer it read into; the generator then names the next
  fields[kBufferCb] = (n: number, buf: Buffer): void => {
    // slab bytes are handed on as views: the next read goes after them
    if (currentIsSlab && buf === current) slabUsed += n;
    onRead(buf, n);
  };
  fields[kBufferGen] = choose;
  (handle as UserBufferHandle).useUserBuffer(first);
  return true;
}
