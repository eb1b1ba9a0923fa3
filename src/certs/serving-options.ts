// The admission port's TLS settings, built in one place for the first secure context and for
// every reloaded one. Node's server.setSecureContext() resets each option it is not given to the
// process default (minVersion to tls.DEFAULT_MIN_VERSION, which --tls-min-v1.x in NODE_OPTIONS
// changes), so a reload that passed only the key pair silently dropped the configured settings;
// with --client-ca it would also drop the client CA, and every API server handshake would fail.
import type { SecureContextOptions, TlsOptions } from 'node:tls';
import type { KeyPair } from './keypair.ts';

/** TLS 1.2 or later, like controller-runtime's webhook server (Go's crypto/tls default). */
export const MIN_TLS_VERSION = 'TLSv1.2';

/** What is served now: the key pair, and with --client-ca the bundle client certificates must chain to. */
export interface ServingMaterial {
  pair: KeyPair;
  clientCa?: Buffer;
}

export function servingTlsOptions({ pair, clientCa }: ServingMaterial): SecureContextOptions {
  return { cert: pair.cert, key: pair.key, minVersion: MIN_TLS_VERSION, ...(clientCa ? { ca: clientCa } : {}) };
}

/**
 * The server's options at creation: the secure context's, and with a client CA the demand for a
 * client certificate that chains to it (these two are the server's own; a reload keeps them).
 */
export function serverTlsOptions(material: ServingMaterial): TlsOptions {
  return {
    ...servingTlsOptions(material),
    ...(material.clientCa ? { requestCert: true, rejectUnauthorized: true } : {}),
  };
}

/** Serves `material` to new connections from now on, with the same settings as the first context. */
export function replaceServingMaterial(
  server: { setSecureContext(options: SecureContextOptions): void },
  material: ServingMaterial,
): void {
  server.setSecureContext(servingTlsOptions(material));
}
