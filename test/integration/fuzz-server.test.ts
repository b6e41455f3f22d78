/**
 * The short run of the whole-server fuzzer (compat/fuzz; `npm run fuzz -- --minutes N` for long ones):
 * 35 s of valid, mutated and adversarial request streams over several connections and a SASL
 * listener against a child broker, while a kafkajs producer works on another connection. Each case
 * checks that the broker lives, answers ApiVersions on a new connection, stays under its RSS budget,
 * logs at most one line per bad input and answers in order with decodable responses; at the end every
 * acknowledged background record is read back. A failure prints the shrunk stream and its replay.
 */
import { expect } from 'chai';
import { fuzzRun } from '../../compat/fuzz/main.js';

const BUDGET_MS = 35_000;

describe('whole-server fuzz (short run)', function () {
  this.timeout(BUDGET_MS + 180_000);

  it('survives 35 s of fuzzed request streams with a kafkajs producer alongside', async () => {
    const seed = process.env['GREGOR_FUZZ_SEED'] === undefined ? undefined : Number(process.env['GREGOR_FUZZ_SEED']);
    const summary = await fuzzRun({ budgetMs: BUDGET_MS, sasl: true, rssBudgetMb: 400, ...(seed === undefined ? {} : { seed }) });
    const failure = summary.failed
      ? `${String(summary['failure'])}\nshrunk case: ${JSON.stringify(summary['counterexample'])}\nreplay: ${String(summary['replay'])}`
      : '';
    expect(summary.failed, failure).to.equal(false);
    // the run did work: cases ran, most served APIs were sent, the background records all read back
    expect(summary['cases']).to.be.greaterThan(20);
    expect(summary['apisCovered']).to.be.greaterThan(30);
    expect(summary['backgroundVerified']).to.be.greaterThan(0);
    expect(summary['backgroundVerified']).to.equal(summary['backgroundAcked']);
  });
});
