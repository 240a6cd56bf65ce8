/**
 * Fails the run when any test is skipped or left as a todo: a skipped test checks nothing while the run
 * still looks green. A run narrowed on purpose (`-t`/`--testNamePattern`) skips the other tests of a file
 * by design, so there the skipped tests are listed but do not fail it.
 */
export default class SkippedTestsReporter {
  #globalConfig;
  #error = undefined;

  constructor(globalConfig) {
    this.#globalConfig = globalConfig;
  }

  onRunComplete(_contexts, results) {
    const skipped = [];
    for (const file of results.testResults) {
      for (const test of file.testResults) {
        if (test.status === 'pending' || test.status === 'skipped' || test.status === 'todo') {
          skipped.push(`${test.status}: ${file.testFilePath} › ${test.fullName}`);
        }
      }
    }
    if (skipped.length === 0) return;
    const narrowed = Boolean(this.#globalConfig.testNamePattern);
    const summary = `${skipped.length} test(s) skipped or todo, which ${narrowed ? 'does not fail this narrowed run' : 'fails the run'}:\n  ${skipped.join('\n  ')}`;
    process.stderr.write(`\n${summary}\n`);
    if (!narrowed) this.#error = new Error(`a skipped test is a failure: ${summary}`);
  }

  getLastError() {
    return this.#error;
  }
}
