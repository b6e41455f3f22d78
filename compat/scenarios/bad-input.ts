/**
 * Bad input on other connections must not disturb a well-behaved client: garbage bytes, a frame
 * announcing 2 GiB, an unknown API key and a truncated Produce body are sent on their own sockets
 * while the client produces and reads back; each bad connection must be closed by the broker, and
 * the broker must still answer afterwards.
 */
import { randomBytes } from 'node:crypto';
import { probeApiVersions, RawConnection } from '../lib/raw.js';
import { roundTrip } from './produce-consume.js';
import type { Scenario } from './context.js';

function frame(apiKey: number, apiVersion: number, body: Buffer): Buffer {
  const clientId = Buffer.from('bad-input');
  const header = Buffer.alloc(10 + clientId.length);
  header.writeInt16BE(apiKey, 0);
  header.writeInt16BE(apiVersion, 2);
  header.writeInt32BE(7, 4);
  header.writeInt16BE(clientId.length, 8);
  clientId.copy(header, 10);
  const size = Buffer.alloc(4);
  size.writeInt32BE(header.length + body.length);
  return Buffer.concat([size, header, body]);
}

const BAD_INPUTS: [string, () => Buffer][] = [
  ['garbage frame', () => Buffer.concat([Buffer.from([0, 0, 0, 64]), randomBytes(64)])],
  ['oversized frame (2 GiB announced)', () => Buffer.concat([Buffer.from([0x7f, 0xff, 0xff, 0xff]), randomBytes(1024)])],
  ['unknown API key 9999', () => frame(9999, 0, Buffer.alloc(8))],
  ['truncated Produce v3 body', () => frame(0, 3, Buffer.from([0xff, 0xff, 0, 1]))],
];

export const badInput: Scenario = {
  id: 'bad-input',
  title: 'bad input on other connections',
  description:
    'garbage frame, 2 GiB size prefix, unknown API key, truncated Produce: each connection is closed by the broker while this client produces and reads back 12 records; the broker answers ApiVersions afterwards',
  ops: ['produce', 'consume'],
  async run(ctx, client) {
    const attack = async (): Promise<string[]> => {
      const kept: string[] = [];
      for (const [name, bytes] of BAD_INPUTS) {
        const c = await RawConnection.connect(ctx.main.bootstrap);
        try {
          await c.write(bytes());
          if (!(await c.waitClosed(5000))) kept.push(name);
        } finally {
          c.close();
        }
      }
      return kept;
    };
    const [kept, detail] = await Promise.all([attack(), roundTrip(ctx, client, ctx.topic('bad'), 2, 'none', -1)]);
    if (kept.length > 0) throw new Error(`broker kept the connection open after: ${kept.join(', ')}`);
    await probeApiVersions(ctx.main.bootstrap);
    return `${BAD_INPUTS.length} bad connections closed; client unaffected (${detail})`;
  },
};
