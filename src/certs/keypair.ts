// A serving key pair read from a directory in the layout of a kubernetes.io/tls Secret
// (tls.crt, tls.key), checked before use: a mismatched or broken pair is an error here, not a
// failed handshake later.
import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import tls from 'node:tls';

export const CERT_FILE = 'tls.crt';
export const KEY_FILE = 'tls.key';
export const CA_FILE = 'ca.crt';

export interface KeyPair {
  cert: Buffer;
  key: Buffer;
}

export interface CertSummary {
  fingerprint256: string;
  subjectAltName: string;
  validFrom: string;
  validTo: string;
}

export async function readKeyPair(dir: string): Promise<KeyPair> {
  const [cert, key] = await Promise.all([readFile(join(dir, CERT_FILE)), readFile(join(dir, KEY_FILE))]);
  checkKeyPair({ cert, key });
  return { cert, key };
}

/** Throws with a clear message unless cert and key load together into a TLS context. */
export function checkKeyPair(pair: KeyPair): void {
  try {
    tls.createSecureContext({ cert: pair.cert, key: pair.key });
  } catch (err) {
    throw new Error(`${CERT_FILE}/${KEY_FILE} are not a usable pair: ${(err as Error).message}`, { cause: err });
  }
}

/** Fingerprint, names and validity of the leaf certificate, for logs. */
export function summarizeCert(cert: Buffer | string): CertSummary {
  const x = new X509Certificate(cert);
  return {
    fingerprint256: x.fingerprint256,
    subjectAltName: x.subjectAltName ?? '',
    validFrom: x.validFrom,
    validTo: x.validTo,
  };
}
