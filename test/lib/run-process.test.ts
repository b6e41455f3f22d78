import { expect } from 'chai';
import { runProcess } from '../helpers/process.js';

// rdkafkaRoundTrip (test/helpers/roundtrip.ts) tells a client that crashed from one that failed by this signal
describe('test process runner', () => {
  it('reports the signal that ended a child, and the exit code of one that exited', async () => {
    const aborted = await runProcess(process.execPath, ['-e', "process.kill(process.pid, 'SIGABRT')"], '', 30_000);
    expect(aborted.code).to.equal(null);
    expect(aborted.signal).to.equal('SIGABRT');
    const exited = await runProcess(process.execPath, ['-e', 'process.stdout.write("x"); process.exit(3)'], '', 30_000);
    expect(exited.code).to.equal(3);
    expect(exited.signal).to.equal(null);
    expect(exited.stdout.toString()).to.equal('x');
  });
});
