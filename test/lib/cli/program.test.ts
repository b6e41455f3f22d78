/** The command line itself: help, usage errors (exit 2), unreachable brokers (exit 1). */
import { expect } from 'chai';
import net from 'node:net';
import { runCli } from '../../helpers/cli.js';

describe('cli: command line and exit codes', function () {
  this.timeout(30_000);

  it('--help documents the commands, the exit codes and KAFKA_BOOTSTRAP_SERVERS (exit 0)', async () => {
    for (const args of [
      ['topic', '--help'],
      ['consume', '--help'],
      ['group', 'seek', '--help'],
      ['cluster', 'help', 'health'],
    ]) {
      const r = await runCli(args);
      expect(r.code, args.join(' ')).to.equal(0);
      expect(r.out, args.join(' ')).to.contain('Exit codes:');
      expect(r.out).to.contain('2  usage');
      expect(r.out).to.contain('KAFKA_BOOTSTRAP_SERVERS');
    }
    const c = await runCli(['consume', '--help']);
    expect(c.out).to.contain('-f, --format-string <fmt>');
    expect(c.out).to.contain('-o, --offset <spec>');
  });

  it('usage errors exit 2 without contacting a broker', async () => {
    const cases: [string[], RegExp][] = [
      [['topic'], /Usage: gregor topic/],
      [['topic', 'create'], /missing required argument 'topics'/],
      [['topic', 'list', '--bogus'], /unknown option '--bogus'/],
      [['topic', 'list', '--format', 'yaml'], /Allowed choices are text, json/],
      [['consume', 't', '-c', 'x'], /--count 'x' is not a non-negative integer/],
      [['consume', 't', '-o', 'later', '-b', '127.0.0.1:1'], /offset 'later' is not one of/],
      [['consume', 't', '-f', '%q', '-b', '127.0.0.1:1'], /unknown format token '%q'/],
      [['consume', 't', '-g', 'g', '-p', '0'], /cannot be used with option '-g/],
      [['produce', 't', '--acks', '2'], /acks '2' is not one of/],
      [['topic', 'list', '-b', 'host:notaport'], /bad broker address/],
      [['group', 'seek', 'g'], /required option '--to <target>' not specified/],
      [['topic', 'add-partitions', 't', '-b', '127.0.0.1:1'], /give --num <n>/],
      [['partitions', 'reassign', '-t', 't', '-p', '0', '-b', '127.0.0.1:1'], /give either --replicas or --cancel/],
      [['partitions', 'reassign', '-t', 't', '-p', '0', '-r', '1,x'], /'1,x' is not a list of broker ids/],
      [['partitions', 'reassign', '-t', 't', '-r', '1'], /required option '-p, --partition <list>' not specified/],
      [['partitions', 'elect-leaders', '--type', 'dirty'], /Allowed choices are preferred, unclean/],
    ];
    for (const [args, re] of cases) {
      const r = await runCli(args);
      expect(r.code, `${args.join(' ')}: ${r.err}`).to.equal(2);
      expect(r.err + r.out, args.join(' ')).to.match(re);
    }
  });

  it('an unreachable broker exits 1 and names the address; KAFKA_BOOTSTRAP_SERVERS is the default', async () => {
    const s = net.createServer();
    const port = await new Promise<number>((r) => s.listen(0, '127.0.0.1', () => r((s.address() as net.AddressInfo).port)));
    s.close();
    const r = await runCli(['topic', 'list', '-b', `127.0.0.1:${port}`]);
    expect(r.code).to.equal(1);
    expect(r.err).to.equal(`gregor: cannot connect to bootstrap 127.0.0.1:${port}: ECONNREFUSED [GREGOR_ERR_CLIENT_CONNECT]\n`);
    const e = await runCli(['cluster', 'info'], { env: { KAFKA_BOOTSTRAP_SERVERS: `127.0.0.1:${port}` } });
    expect(e.code).to.equal(1);
    expect(e.err).to.contain(`bootstrap 127.0.0.1:${port}`);
  });
});
