// Fastify gives every request a child logger bound to its request id. Admission requests log
// through the route's own one line (with the AdmissionReview uid as reqId), so request.log is used
// only on the rare refusal or failure: the child is made on its first use, not for every request.
import type { Bindings, ChildLoggerOptions, Logger } from 'pino';

type LogFn = Logger['info'];

export class LazyRequestLogger {
  readonly #parent: Logger;
  readonly #bindings: Bindings;
  readonly #options: ChildLoggerOptions;
  #child: Logger | undefined;

  constructor(parent: Logger, bindings: Bindings, options: ChildLoggerOptions) {
    this.#parent = parent;
    this.#bindings = bindings;
    this.#options = options;
  }

  get #logger(): Logger {
    return (this.#child ??= this.#parent.child(this.#bindings, this.#options));
  }

  get level(): string {
    return this.#logger.level;
  }

  set level(level: string) {
    this.#logger.level = level;
  }

  // Methods on the prototype: nothing is allocated per request until one is called.
  fatal(...args: Parameters<LogFn>): void {
    this.#logger.fatal(...args);
  }

  error(...args: Parameters<LogFn>): void {
    this.#logger.error(...args);
  }

  warn(...args: Parameters<LogFn>): void {
    this.#logger.warn(...args);
  }

  info(...args: Parameters<LogFn>): void {
    this.#logger.info(...args);
  }

  debug(...args: Parameters<LogFn>): void {
    this.#logger.debug(...args);
  }

  trace(...args: Parameters<LogFn>): void {
    this.#logger.trace(...args);
  }

  silent(...args: Parameters<LogFn>): void {
    this.#logger.silent(...args);
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): Logger {
    return this.#logger.child(bindings, options);
  }
}
