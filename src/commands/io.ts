// Where a command writes: stdout and stderr in the CLI, buffers in tests.
export interface CommandIo {
  out(text: string): void;
  err(text: string): void;
}
