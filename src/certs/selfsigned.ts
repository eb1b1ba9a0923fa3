// The offline default: a self-signed serving certificate generated on first start and reused
// afterwards, so `serve` needs no cluster and curl can pin it (`--cacert certs/ca.crt`). The
// certificate is its own CA, which is also what a webhook configuration's caBundle needs.
import { X509Certificate } from 'node:crypto';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CA_FILE, CERT_FILE, KEY_FILE, readKeyPair } from './keypair.ts';
import type { KeyPair } from './keypair.ts';

export interface SelfSignedOptions {
  /** DNS names and IP addresses the certificate is valid for. */
  dnsNames?: string[];
  ipAddresses?: string[];
  validDays?: number;
  now?: Date;
}

export interface EnsuredCert extends KeyPair {
  dir: string;
  /** True when this call wrote a new certificate; false when a valid one was reused. */
  generated: boolean;
  /** Why a new one was written (absent, unreadable, expired). */
  reason?: string;
}

const DEFAULTS = { dnsNames: ['localhost'], ipAddresses: ['127.0.0.1', '::1'], validDays: 365 };

/** Reuses `dir`'s tls.crt/tls.key when they are a valid, unexpired pair; otherwise generates them. */
export async function ensureSelfSignedCert(dir: string, options: SelfSignedOptions = {}): Promise<EnsuredCert> {
  const now = options.now ?? new Date();
  let reason: string;
  try {
    const pair = await readKeyPair(dir);
    const validTo = new Date(new X509Certificate(pair.cert).validTo);
    if (validTo.getTime() > now.getTime()) return { ...pair, dir, generated: false };
    reason = `the certificate in ${dir} expired on ${validTo.toISOString()}`;
  } catch (err) {
    reason = (err as NodeJS.ErrnoException).code === 'ENOENT' ? `no certificate in ${dir} yet` : (err as Error).message;
  }
  const pair = await generateSelfSigned({ ...options, now });
  await mkdir(dir, { recursive: true });
  // Key first and each file renamed into place, so a watcher never sees half a file.
  await writeAtomic(join(dir, KEY_FILE), pair.key, 0o600);
  await writeAtomic(join(dir, CERT_FILE), pair.cert, 0o644);
  await writeAtomic(join(dir, CA_FILE), pair.cert, 0o644);
  return { ...pair, dir, generated: true, reason };
}

export async function generateSelfSigned(options: SelfSignedOptions = {}): Promise<KeyPair> {
  const now = options.now ?? new Date();
  // @peculiar/x509 (~15 MiB, ~0.15 s at import) loads only when a certificate is generated, not
  // on a restart that reuses one.
  const { createSelfSignedServing } = await import('./authority.ts');
  const pair = await createSelfSignedServing({
    commonName: 'trainjob-webhook',
    hosts: [...(options.dnsNames ?? DEFAULTS.dnsNames), ...(options.ipAddresses ?? DEFAULTS.ipAddresses)],
    now,
    validityMs: (options.validDays ?? DEFAULTS.validDays) * 86_400_000,
  });
  return { cert: Buffer.from(pair.certPem), key: Buffer.from(pair.keyPem) };
}

async function writeAtomic(file: string, data: Buffer, mode: number): Promise<void> {
  const tmp = `${file}.tmp-${process.pid}`;
  await writeFile(tmp, data, { mode });
  await rename(tmp, file);
}
