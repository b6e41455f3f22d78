import { expect } from 'chai';
import { Writable } from 'node:stream';
import { createLogger, resolveLevel } from '../../../lib/observability/logger.js';

function sink(): { destination: Writable; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString().split('\n')) if (l !== '') lines.push(JSON.parse(l) as Record<string, unknown>);
      cb();
    },
  });
  return { destination, lines };
}

describe('observability: logger', () => {
  const saved = process.env['LOG_LEVEL'];
  afterEach(() => {
    if (saved === undefined) delete process.env['LOG_LEVEL'];
    else process.env['LOG_LEVEL'] = saved;
  });

  it('writes one JSON line per event with level, time and msg', () => {
    const { destination, lines } = sink();
    createLogger({ level: 'info', destination }).info({ a: 1 }, 'hello');
    expect(lines).to.have.length(1);
    expect(lines[0]).to.include({ level: 'info', msg: 'hello', a: 1 });
    expect(lines[0]!['time']).to.be.a('string');
  });

  it('defaults to info and honours LOG_LEVEL', () => {
    delete process.env['LOG_LEVEL'];
    expect(createLogger({ destination: sink().destination }).level).to.equal('info');
    process.env['LOG_LEVEL'] = 'debug';
    const { destination, lines } = sink();
    const log = createLogger({ destination });
    log.debug('seen');
    log.trace('not seen');
    expect(lines.map((l) => l['msg'])).to.deep.equal(['seen']);
    process.env['LOG_LEVEL'] = 'bogus';
    expect(resolveLevel()).to.equal('info');
  });

  it('an explicit level wins over LOG_LEVEL', () => {
    process.env['LOG_LEVEL'] = 'debug';
    expect(createLogger({ level: 'warn', destination: sink().destination }).level).to.equal('warn');
  });

  it('child loggers carry their fields', () => {
    const { destination, lines } = sink();
    createLogger({ level: 'info', destination }).child({ conn: 'c-1' }).warn('x');
    expect(lines[0]).to.include({ conn: 'c-1', level: 'warn', msg: 'x' });
  });
});
