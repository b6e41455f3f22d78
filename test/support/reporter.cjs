// Mocha's spec reporter plus one closing line "N passed, N failed, N skipped" that CI tooling reads.
'use strict';
const Mocha = require('mocha');

class SpecWithSummary extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    runner.once(Mocha.Runner.constants.EVENT_RUN_END, () => {
      const s = runner.stats ?? {};
      process.stdout.write(`\n${s.passes ?? 0} passed, ${s.failures ?? 0} failed, ${s.pending ?? 0} skipped\n`);
    });
  }
}

module.exports = SpecWithSummary;
