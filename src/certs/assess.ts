// Pure decisions of the rotation: is the material in the Secret still good, and which CA
// certificates the caBundle carries. Mirrors cert-controller's checks (a CA valid at now +
// lookahead with its key; a serving certificate with its key, signed by that CA, naming the
// Service, valid at now + lookahead) so every replica with the same flags reaches the same answer.
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';

/** The Secret's data, decoded. */
export interface CertMaterial {
  /** The CA bundle: the signing CA first, then a previous CA kept until it expires. */
  caCrt?: string;
  caKey?: string;
  tlsCrt?: string;
  tlsKey?: string;
}

export type Assessment =
  { action: 'keep' } | { action: 'new-serving'; reason: string } | { action: 'new-ca'; reason: string };

export interface AssessOptions {
  hosts: readonly string[];
  now: Date;
  /** Renew what would expire within this long (cert-controller: 90 days). */
  lookaheadMs: number;
}

const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/** The certificates of a PEM bundle, in order. */
export function splitPemBundle(pem: string): string[] {
  return pem.match(PEM_CERT) ?? [];
}

export function assessMaterial(m: CertMaterial, options: AssessOptions): Assessment {
  const at = new Date(options.now.getTime() + options.lookaheadMs);
  const ca = checkCa(m, at);
  if (typeof ca === 'string') return { action: 'new-ca', reason: ca };
  const serving = checkServing(m, ca, options.hosts, options.now, at);
  if (serving) return { action: 'new-serving', reason: serving };
  return { action: 'keep' };
}

/** The signing CA, or why there is no usable one. */
function checkCa(m: CertMaterial, at: Date): X509Certificate | string {
  if (!m.caCrt || !m.caKey) return 'no CA yet';
  const first = splitPemBundle(m.caCrt)[0];
  if (!first) return 'ca.crt holds no certificate';
  let ca: X509Certificate;
  try {
    ca = new X509Certificate(first);
  } catch (err) {
    return `ca.crt does not parse: ${(err as Error).message}`;
  }
  if (!ca.ca) return 'ca.crt is not a CA certificate';
  try {
    if (!ca.checkPrivateKey(createPrivateKey(m.caKey))) return 'ca.key does not belong to ca.crt';
  } catch (err) {
    return `ca.key does not parse: ${(err as Error).message}`;
  }
  if (new Date(ca.validTo) <= at)
    return `the CA expires on ${new Date(ca.validTo).toISOString()}, within the renewal window`;
  return ca;
}

/** Why the serving certificate must be renewed, or undefined when it is good. */
function checkServing(
  m: CertMaterial,
  ca: X509Certificate,
  hosts: readonly string[],
  now: Date,
  at: Date,
): string | undefined {
  if (!m.tlsCrt || !m.tlsKey) return 'no serving certificate yet';
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(m.tlsCrt);
  } catch (err) {
    return `tls.crt does not parse: ${(err as Error).message}`;
  }
  try {
    if (!cert.checkPrivateKey(createPrivateKey(m.tlsKey))) return 'tls.key does not belong to tls.crt';
  } catch (err) {
    return `tls.key does not parse: ${(err as Error).message}`;
  }
  if (!cert.checkIssued(ca) || !cert.verify(ca.publicKey)) return 'tls.crt is not signed by the CA';
  const missing = hosts.filter((h) =>
    isIP(h) ? cert.checkIP(h) === undefined : cert.checkHost(h, { wildcards: false }) === undefined,
  );
  if (missing.length > 0) return `tls.crt does not name ${missing.join(', ')}`;
  if (new Date(cert.validFrom) > now) return `tls.crt is not valid before ${new Date(cert.validFrom).toISOString()}`;
  if (new Date(cert.validTo) <= at)
    return `tls.crt expires on ${new Date(cert.validTo).toISOString()}, within the renewal window`;
  return undefined;
}

/**
 * The ca.crt to write with a new CA: the new one first, then the CA certificates of the old
 * bundle that are still valid, so replicas still serving a certificate of the old CA keep being
 * trusted until they have reloaded.
 */
export function bundleAfterCaRotation(newCaPem: string, oldBundle: string | undefined, now: Date): string {
  const kept = splitPemBundle(oldBundle ?? '').filter((pem) => {
    try {
      const c = new X509Certificate(pem);
      return c.ca && new Date(c.validTo) > now;
    } catch {
      return false;
    }
  });
  return [...splitPemBundle(newCaPem), ...kept.slice(0, 1)].join('\n') + '\n';
}
