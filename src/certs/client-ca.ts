// The CA bundle that signs the API server's client certificate (`serve --client-ca`): read and
// checked at start-up (a bad file is a ConfigError there, never a handshake that fails later),
// then re-read on a poll so a renewed CA (a mounted ConfigMap or Secret) is trusted without a
// restart. A bundle that no longer reads keeps the previous one in force, and says so once. The
// loop is the serving certificate's (reloader.ts followFiles).
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import tls from 'node:tls';
import type { Logger } from '../observability/logger.ts';
import { followFiles } from './reloader.ts';

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

/**
 * The certificates of a PEM bundle, each readable and usable as a TLS trust anchor; throws an
 * Error naming what is wrong (no certificate at all, which one does not parse).
 */
export function checkCaBundle(pem: Buffer): X509Certificate[] {
  const blocks = pem.toString('utf8').match(PEM_CERTIFICATE) ?? [];
  if (blocks.length === 0) throw new Error('holds no PEM certificate (-----BEGIN CERTIFICATE-----)');
  const certs = blocks.map((block, i) => {
    try {
      return new X509Certificate(block);
    } catch (err) {
      throw new Error(`certificate ${i + 1} of ${blocks.length} does not parse: ${(err as Error).message}`, {
        cause: err,
      });
    }
  });
  try {
    tls.createSecureContext({ ca: pem });
  } catch (err) {
    throw new Error(`is not usable as a TLS CA bundle: ${(err as Error).message}`, { cause: err });
  }
  return certs;
}

/** Reads and checks the bundle at start-up (synchronously: flags are parsed once, before serving). */
export function readCaBundleSync(file: string): Buffer {
  const pem = readFileSync(file);
  checkCaBundle(pem);
  return pem;
}

export interface ClientCaWatchOptions {
  file: string;
  /** The bundle in force now; a reload happens only when the file differs from it. */
  current: Buffer;
  /** Puts a checked bundle into service (a new secure context beside the serving certificate). */
  apply: (pem: Buffer) => void;
  logger: Logger;
  pollMs?: number;
}

export interface ClientCaWatch {
  /** Re-reads the file now; resolves when done. */
  check(): Promise<void>;
  close(): void;
}

export function watchClientCa(options: ClientCaWatchOptions): ClientCaWatch {
  const { file, logger } = options;
  return followFiles<Buffer>({
    current: options.current,
    read: () => readFile(file),
    same: (a, b) => a.equals(b),
    apply: (pem) => {
      checkCaBundle(pem);
      options.apply(pem);
    },
    failed: (message) =>
      logger.error(
        { clientCa: file, error: message },
        'client CA reload failed; still trusting the previous client CA bundle',
      ),
    applied: (pem) =>
      logger.info({ clientCa: file, certificates: checkCaBundle(pem).length }, 'client CA bundle reloaded'),
    pollMs: options.pollMs ?? 10_000,
  });
}
