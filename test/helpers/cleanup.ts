/**
 * What a suite's before()/beforeEach() opened, released by its after()/afterEach(). Mocha runs the
 * after hook even when the before hook failed part-way, so it must release only what was actually
 * opened: registering each resource as it is created does that, and lets the suite keep its
 * variables typed as always present for the tests (which never run when the before hook failed).
 */
export class Cleanup {
  private readonly steps: (() => unknown)[] = [];

  /** Registers `release(resource)` and returns `resource`. */
  add<T>(resource: T, release: (resource: T) => unknown): T {
    this.steps.push(() => release(resource));
    return resource;
  }

  /** Registers a step with no resource (e.g. a flag to reset). */
  defer(step: () => unknown): void {
    this.steps.push(step);
  }

  /**
   * Runs and forgets every step, the last registered first (a client before the broker it talks to,
   * the broker before its data directory). Every step runs even if one fails; the first failure is rethrown.
   */
  async run(): Promise<void> {
    const failures: unknown[] = [];
    for (let step = this.steps.pop(); step !== undefined; step = this.steps.pop()) {
      try {
        await step();
      } catch (e) {
        failures.push(e);
      }
    }
    if (failures.length > 0) throw failures[0];
  }
}
