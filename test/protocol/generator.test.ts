import { expect } from 'chai';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { generate } from '../../scripts/generate-protocol.js';
import { KAFKA_REFERENCE, PROJECT_ROOT } from '../helpers/project.js';

function listFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...listFiles(p));
    else out.push(p);
  }
  return out;
}

describe('protocol generator', () => {
  const generatedDir = join(PROJECT_ROOT, 'protocol/generated');

  it('the committed protocol/generated matches a fresh generation from the Kafka reference', function () {
    if (!existsSync(join(KAFKA_REFERENCE, 'messages'))) {
      // The reference lives outside the repository (../shared); without it there is nothing to compare to.
      this.skip();
    }
    const { files } = generate(KAFKA_REFERENCE);
    const committed = listFiles(generatedDir)
      .map((p) => relative(generatedDir, p))
      .sort();
    expect(committed).to.deep.equal([...files.keys()].sort());
    for (const [rel, body] of files) {
      const onDisk = readFileSync(join(generatedDir, rel), 'utf8');
      if (onDisk !== body) expect.fail(`protocol/generated/${rel} differs from a fresh generation: run npm run generate`);
    }
  });

  it('generated modules carry no prose from the reference (no "about" text)', function () {
    if (!existsSync(join(KAFKA_REFERENCE, 'messages'))) this.skip(); // the reference lives outside the repository (../shared)
    const about = JSON.parse(
      readFileSync(join(KAFKA_REFERENCE, 'messages/ProduceRequest.json'), 'utf8')
        .split('\n')
        .filter((l) => !l.trim().startsWith('//'))
        .join('\n'),
    ) as { fields: { about?: string }[] };
    const sample = about.fields.map((f) => f.about).filter((a): a is string => a !== undefined && a.length > 20);
    expect(sample.length).to.be.greaterThan(0);
    const produce = readFileSync(join(generatedDir, 'produce.ts'), 'utf8') + readFileSync(join(generatedDir, 'schema.json'), 'utf8');
    for (const a of sample) expect(produce).to.not.include(a);
  });
});
