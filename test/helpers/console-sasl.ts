/** A child broker with a PLAINTEXT listener for the clients and a SASL_PLAINTEXT one (PLAIN + SCRAM), so that the console asks for a login. */
import { rmSync } from 'node:fs';
import { startChildBroker, tempDir, type ChildBroker } from './broker.js';
import type { Cleanup } from './cleanup.js';
import { addScramUser, saslConfig } from './sasl.js';

export const SCRAM_USER = { user: 'carol', password: 'carol-secret' } as const;

export async function startSaslConsoleBroker(cleanup: Cleanup, prefix: string): Promise<ChildBroker & { admin: string }> {
  const dataDir = cleanup.add(tempDir(prefix), (d) => rmSync(d, { recursive: true, force: true }));
  const broker = await startChildBroker(dataDir, 0, {
    'group.initial.rebalance.delay.ms': '0',
    listeners: 'PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0',
    'connection.failed.authentication.delay.ms': '200',
    ...saslConfig(['SASL_PLAINTEXT'], ['PLAIN', 'SCRAM-SHA-512']),
  });
  cleanup.defer(async () => {
    broker.child.kill('SIGTERM');
    await broker.exited;
  });
  if (broker.admin === null) throw new Error('no admin listener');
  await addScramUser(broker.bootstrap, SCRAM_USER.user, SCRAM_USER.password, ['SCRAM-SHA-512']);
  return { ...broker, admin: broker.admin };
}
