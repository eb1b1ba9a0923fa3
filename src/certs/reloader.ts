// Certificate reload: watch the directory (a mounted Secret is updated by swapping a symlink, so
// the directory is watched, not the files), debounce bursts of events, and poll as a backstop
// for filesystems without change events (like controller-runtime's certwatcher). A changed pair
// is checked before it is served; a bad one is logged and counted and the old one stays. The
// loop (followFiles) also follows the client CA bundle (client-ca.ts).
import { watch } from 'node:fs';
import type { FSWatcher } from 'node:fs';
import type { Logger } from '../observability/logger.ts';
import type { WebhookMetrics } from '../observability/metrics.ts';
import { readKeyPair, summarizeCert } from './keypair.ts';
import type { KeyPair } from './keypair.ts';

export interface CertReloaderOptions {
  dir: string;
  /** The pair being served now; reloads happen only when the files differ from it. */
  current: KeyPair;
  /** Puts a checked pair into service, e.g. replaceServingCertificate (serving-options.ts). */
  apply: (pair: KeyPair) => void;
  logger: Logger;
  metrics: WebhookMetrics;
  debounceMs?: number;
  pollMs?: number;
}

export interface CertReloader {
  /** Re-reads the files now (what a change event triggers); resolves when done. */
  check(): Promise<void>;
  close(): void;
}

/**
 * One loop for every file the secure context is built from (the serving pair here, the client CA
 * bundle in client-ca.ts): re-read on a poll and, where a directory is watched, on its change
 * events (debounced); serialized, so two reloads never race; a value equal to the one in service
 * is left alone; one that fails to read or to apply keeps the previous in service and is reported
 * once until a different failure or a success.
 */
export interface FollowOptions<T> {
  /** The value in service now; a reload happens only when what is read differs from it. */
  current: T;
  read(): Promise<T>;
  same(a: T, b: T): boolean;
  /** Checks and puts a new value into service; throws to keep the previous one. */
  apply(value: T): void;
  failed(message: string): void;
  applied(value: T): void;
  /** A directory whose change events trigger a reload (beside the poll). */
  watchDir?: { dir: string; debounceMs: number; failed(message: string): void };
  pollMs: number;
}

export function followFiles<T>(options: FollowOptions<T>): CertReloader {
  let current = options.current;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  let lastFailure = '';
  let closed = false;

  async function reload(): Promise<void> {
    if (closed) return;
    try {
      const next = await options.read();
      if (options.same(next, current)) {
        lastFailure = '';
        return;
      }
      options.apply(next);
      current = next;
    } catch (err) {
      const message = (err as Error).message;
      // The poll retries every few seconds: report a broken file once, not on every poll.
      if (message !== lastFailure) {
        lastFailure = message;
        options.failed(message);
      }
      return;
    }
    lastFailure = '';
    options.applied(current);
  }

  const check = (): Promise<void> => (running = running.then(reload, reload));

  let watcher: FSWatcher | undefined;
  const watched = options.watchDir;
  if (watched) {
    const schedule = () => {
      clearTimeout(timer);
      timer = setTimeout(() => void check(), watched.debounceMs);
    };
    try {
      watcher = watch(watched.dir, { persistent: false }, schedule);
      watcher.on('error', (err) => watched.failed(`${err.message}; polling only`));
    } catch (err) {
      watched.failed(`${(err as Error).message}; polling only`);
    }
  }
  const poll = setInterval(() => void check(), options.pollMs);
  poll.unref();

  return {
    check,
    close() {
      closed = true;
      clearTimeout(timer);
      clearInterval(poll);
      watcher?.close();
    },
  };
}

export function watchCertificates(options: CertReloaderOptions): CertReloader {
  const { dir, logger, metrics } = options;
  return followFiles<KeyPair>({
    current: options.current,
    read: () => readKeyPair(dir),
    same: (a, b) => a.cert.equals(b.cert) && a.key.equals(b.key),
    apply: options.apply,
    failed: (message) => {
      metrics.certReloads.inc({ result: 'failure' });
      logger.error({ dir, error: message }, 'certificate reload failed; still serving the previous certificate');
    },
    applied: (pair) => {
      metrics.certReloads.inc({ result: 'success' });
      logger.info({ dir, ...summarizeCert(pair.cert) }, 'certificate reloaded');
    },
    watchDir: {
      dir,
      debounceMs: options.debounceMs ?? 250,
      failed: (message) => logger.warn({ dir, error: message }, 'certificate directory watch failed'),
    },
    pollMs: options.pollMs ?? 10_000,
  });
}
