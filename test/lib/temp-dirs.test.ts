import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { makeTempDir, pendingTempDirs } from '../helpers/temp-dirs.js';

describe('test temp dirs', () => {
  it('are registered when made and removed when the process that made them exits', () => {
    const mine = makeTempDir('gregor-tempdirs-self-');
    expect(pendingTempDirs()).to.include(mine);
    const helper = fileURLToPath(new URL('../helpers/temp-dirs.js', import.meta.url));
    const script = `import(${JSON.stringify(helper)}).then(async m => { const d = m.makeTempDir('gregor-tempdirs-child-'); const fs = await import('node:fs'); console.log(d + ' ' + fs.existsSync(d)); })`;
    const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
    expect(r.status).to.equal(0);
    const [childDir = '', existed] = r.stdout.trim().split(' ');
    expect(childDir).to.match(/gregor-tempdirs-child-/);
    expect(existed, 'the child made its dir').to.equal('true');
    expect(existsSync(childDir), 'the child removed its dir at exit').to.equal(false);
    expect(existsSync(mine), 'ours stays until this process exits').to.equal(true);
  });
});
