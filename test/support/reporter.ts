import Mocha from 'mocha';

/**
 * The spec reporter plus one plain closing line (`tests: N passed, N failed, N skipped`) that CI tooling
 * reads whatever the test runner.
 */
class SpecWithSummary extends Mocha.reporters.Spec {
  constructor(runner: Mocha.Runner, options?: Mocha.MochaOptions) {
    super(runner, options);
    runner.once(Mocha.Runner.constants.EVENT_RUN_END, () => {
      const { passes, failures, pending } = this.stats;
      process.stdout.write(`\ntests: ${passes} passed, ${failures} failed, ${pending} skipped\n`);
    });
  }
}

export = SpecWithSummary;
