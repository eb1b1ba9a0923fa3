// Preloaded by a node --test run that uses --test-force-exit (`node --import
// ./test/support/blocking-stdio.ts --test --test-force-exit ...`): makes this process's stdout and
// stderr blocking. A test file's process reports to the runner over a pipe, and on Linux a pipe
// write is asynchronous: --test-force-exit calls process.exit() once the last test ends, and what
// was still queued for the pipe is dropped. The runner then never hears of the file's last tests
// (counted as not there when they passed; a bare "test failed" for the file when one failed).
// Measured on test/cel/semantics.test.ts: 18 to 30 of its 30 tests reported without this, 30 of 30
// with it.
for (const stream of [process.stdout, process.stderr]) {
  (stream as unknown as { _handle?: { setBlocking?: (blocking: boolean) => void } })._handle?.setBlocking?.(true);
}
