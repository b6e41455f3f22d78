/**
 * `gregor cluster start -n 2 --format json`: starts an etcd and two brokers, prints where they are,
 * serves clients until SIGINT, then stops everything and removes its temporary directory.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { Kafka, logLevel } from 'kafkajs';
import { PROJECT_ROOT } from '../helpers/project.js';

interface Started {
  clusterId: string;
  bootstrap: string;
  etcd: string;
  dir: string;
  brokers: { nodeId: number; bootstrap: string; admin: string | null; logFile: string }[];
}

describe('gregor cluster start', function () {
  this.timeout(90_000);

  it('runs an etcd and N brokers that form one cluster, until SIGINT stops them all', async () => {
    const child = spawn(process.execPath, [join(PROJECT_ROOT, 'bin/gregor.js'), 'cluster', 'start', '-n', '2', '--format', 'json'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    let out = '';
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    try {
      const started = await new Promise<Started>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no JSON line within 60 s:\n${out}\n${err}`)), 60_000);
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          const line = out.split('\n').find((l) => l.startsWith('{'));
          if (line !== undefined) {
            clearTimeout(timer);
            resolve(JSON.parse(line) as Started);
          }
        });
        child.on('exit', (code) => reject(new Error(`exited ${code}:\n${out}\n${err}`)));
      });
      expect(started.brokers.map((b) => b.nodeId)).to.deep.equal([1, 2]);
      expect(started.bootstrap.split(',')).to.have.length(2);
      expect(existsSync(started.dir)).to.equal(true);
      const kafka = new Kafka({ clientId: 'cluster-cli', brokers: started.bootstrap.split(','), logLevel: logLevel.NOTHING });
      const admin = kafka.admin();
      await admin.connect();
      try {
        const cluster = await admin.describeCluster();
        expect(cluster.clusterId).to.equal(started.clusterId);
        expect(cluster.brokers.map((b) => b.nodeId).sort()).to.deep.equal([1, 2]);
        expect([1, 2]).to.include(cluster.controller);
      } finally {
        await admin.disconnect();
      }
      child.kill('SIGINT');
      expect(await exited).to.equal(0);
      expect(existsSync(started.dir), 'the temporary directory is removed').to.equal(false);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
