// The admission port's TLS settings, built in one place for the first secure context and for
// every reloaded one. Node's server.setSecureContext() resets each option it is not given to the
// process default (minVersion to tls.DEFAULT_MIN_VERSION, which --tls-min-v1.x in NODE_OPTIONS
// changes), so a reload that passed only the key pair silently dropped the configured settings.
import type { SecureContextOptions } from 'node:tls';
import type { KeyPair } from './keypair.ts';

/** TLS 1.2 or later, like controller-runtime's webhook server (Go's crypto/tls default). */
export const MIN_TLS_VERSION = 'TLSv1.2';

export function servingTlsOptions(pair: KeyPair): SecureContextOptions {
  return { cert: pair.cert, key: pair.key, minVersion: MIN_TLS_VERSION };
}

/** Serves `pair` to new connections from now on, with the same settings as the first context. */
export function replaceServingCertificate(
  server: { setSecureContext(options: SecureContextOptions): void },
  pair: KeyPair,
): void {
  server.setSecureContext(servingTlsOptions(pair));
}
