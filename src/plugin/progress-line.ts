// One progress line per step with its elapsed time: on a terminal a spinner redraws the step's line
// as it waits and ends it with a check mark; otherwise (a pipe, a CI log) the line is printed once,
// when the step ends (or is cut short), so that a log reads as the list of steps taken. A step's
// title and detail quote the cluster (Kueue's reasons, pod counts, the report): both are printed
// through printable.ts.
import { printable } from './printable.ts';
export interface StepOutput {
  write(text: string): void;
  isTTY: boolean;
}

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/** 0.4s, 12s, 3m05s. Pure. */
export function elapsed(ms: number): string {
  if (ms < 10_000) return `${(ms / 1000).toFixed(1)}s`;
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}

export class StepLines {
  private title = '';
  private detail = '';
  private started = 0;
  private frame = 0;
  private timer: NodeJS.Timeout | undefined;

  private readonly out: StepOutput;
  private readonly now: () => number;

  constructor(out: StepOutput, now: () => number = Date.now) {
    this.out = out;
    this.now = now;
  }

  /** Starts a step (ending the one before, as done), or updates its detail when it is the same step. */
  step(title: string, detail = ''): void {
    if (title !== this.title) {
      // A wait that ends as the next step begins: its last detail (what it waited on) is over.
      this.end('✓', '');
      this.title = title;
      this.started = this.now();
      if (this.out.isTTY) this.timer = setInterval(() => this.draw(), 100).unref();
    }
    this.detail = detail;
    this.draw();
  }

  /** Ends the current step: '✓' done, '✗' failed or cut short; a final detail may replace the last. */
  end(mark: '✓' | '✗', detail?: string): void {
    if (!this.title) return;
    if (detail !== undefined) this.detail = detail;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    const line = this.line(mark);
    this.out.write(this.out.isTTY ? `\r\x1b[K${line}\n` : `${line}\n`);
    this.title = '';
  }

  private line(mark: string): string {
    const detail = this.detail ? `: ${printable(this.detail)}` : '';
    return `${mark} ${printable(this.title)}${detail} (${elapsed(this.now() - this.started)})`;
  }

  private draw(): void {
    if (!this.out.isTTY || !this.title) return;
    this.frame = (this.frame + 1) % FRAMES.length;
    this.out.write(`\r\x1b[K${this.line(FRAMES[this.frame])}`);
  }
}
