// Certificate reload: watch the directory (a mounted Secret is updated by swapping a symlink, so
// the directory is watched, not the files), debounce bursts of events, and poll as a backstop
// for filesystems without change events (like controller-runtime's certwatcher). A changed pair
// is checked before it is served; a bad one is logged and counted and the old one stays.
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

export function watchCertificates(options: CertReloaderOptions): CertReloader {
  const { dir, logger, metrics } = options;
  const debounceMs = options.debounceMs ?? 250;
  let current = options.current;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  let lastFailure = '';
  let closed = false;

  async function reload(): Promise<void> {
    if (closed) return;
    let pair: KeyPair;
    try {
      pair = await readKeyPair(dir);
    } catch (err) {
      const message = (err as Error).message;
      // The poll retries every few seconds: report a broken pair once, not on every poll.
      if (message !== lastFailure) {
        lastFailure = message;
        metrics.certReloads.inc({ result: 'failure' });
        logger.error({ dir, error: message }, 'certificate reload failed; still serving the previous certificate');
      }
      return;
    }
    lastFailure = '';
    if (pair.cert.equals(current.cert) && pair.key.equals(current.key)) return;
    try {
      options.apply(pair);
    } catch (err) {
      metrics.certReloads.inc({ result: 'failure' });
      logger.error(
        { dir, error: (err as Error).message },
        'certificate reload failed; still serving the previous certificate',
      );
      return;
    }
    current = pair;
    metrics.certReloads.inc({ result: 'success' });
    logger.info({ dir, ...summarizeCert(pair.cert) }, 'certificate reloaded');
  }

  // Serialized, so two reloads never race each other.
  const check = (): Promise<void> => (running = running.then(reload, reload));

  const schedule = () => {
    clearTimeout(timer);
    timer = setTimeout(() => void check(), debounceMs);
  };

  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(dir, { persistent: false }, schedule);
    watcher.on('error', (err) =>
      logger.warn({ dir, error: err.message }, 'certificate directory watch failed; polling only'),
    );
  } catch (err) {
    logger.warn({ dir, error: (err as Error).message }, 'cannot watch the certificate directory; polling only');
  }
  const poll = setInterval(() => void check(), options.pollMs ?? 10_000);
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
