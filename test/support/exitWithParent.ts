/**
 * Preloaded (`--import`) into the service and chain processes the tests spawn: the process exits when
 * its stdin reaches its end, which is when the test process that spawned it ends, however it ends (a
 * test that timed out and never reached its clean-up, a worker the runner killed). So a failed test
 * leaves no service or chain behind it to load the machine under the tests that follow. The spawner
 * passes stdin as a pipe and never writes to it.
 */
process.stdin.once('end', () => process.exit(1));
process.stdin.resume();
