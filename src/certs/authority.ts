// The certificate authority of the in-process rotation: a self-signed CA and the serving
// certificates it signs, as PEM, the way open-policy-agent's cert-controller makes them (CA valid
// 10 years, serving certificate 1 year, both backdated an hour for clocks behind ours), with
// ECDSA P-256 keys instead of RSA 2048 (as secure, and generated in a millisecond).
import { createPrivateKey, webcrypto } from 'node:crypto';
import { isIP } from 'node:net';
import * as x509 from '@peculiar/x509';

type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;
const subtle = webcrypto.subtle;
// @peculiar/x509 takes a WebCrypto provider; node's is one.
const crypto = webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0];
const KEY_ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const SIGNING_ALGORITHM = { name: 'ECDSA', hash: 'SHA-256' } as const;
const BACKDATE_MS = 60 * 60_000;

export interface PemPair {
  certPem: string;
  keyPem: string;
}

export interface IssueOptions {
  now: Date;
  validityMs: number;
}

export const CA_COMMON_NAME = 'trainjob-webhook-ca';

/** A new self-signed CA (basicConstraints CA, keyCertSign). */
export async function createCa(options: IssueOptions): Promise<PemPair> {
  const keys = await generateKeys();
  const cert = await x509.X509CertificateGenerator.createSelfSigned(
    {
      serialNumber: randomSerial(),
      name: `CN=${CA_COMMON_NAME}, O=trainjob-webhook`,
      notBefore: new Date(options.now.getTime() - BACKDATE_MS),
      notAfter: new Date(options.now.getTime() + options.validityMs),
      keys,
      signingAlgorithm: SIGNING_ALGORITHM,
      extensions: [
        new x509.BasicConstraintsExtension(true, 0, true),
        new x509.KeyUsagesExtension(
          x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature,
          true,
        ),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey, false, crypto),
      ],
    },
    crypto,
  );
  return { certPem: cert.toString('pem') + '\n', keyPem: await keyToPem(keys.privateKey) };
}

/** A serving certificate for `hosts` (DNS names or IP addresses) signed by `ca`. */
export async function issueServingCert(ca: PemPair, hosts: readonly string[], options: IssueOptions): Promise<PemPair> {
  if (hosts.length === 0) throw new Error('a serving certificate needs at least one DNS name or IP address');
  const caCert = new x509.X509Certificate(ca.certPem);
  const caKey = await importPrivateKey(ca.keyPem);
  const keys = await generateKeys();
  const cert = await x509.X509CertificateGenerator.create(
    {
      serialNumber: randomSerial(),
      subject: `CN=${hosts[0]}`,
      issuer: caCert.subject,
      notBefore: new Date(options.now.getTime() - BACKDATE_MS),
      // Never beyond the CA: a chain is only as valid as its shortest link.
      notAfter: new Date(Math.min(options.now.getTime() + options.validityMs, caCert.notAfter.getTime())),
      publicKey: keys.publicKey,
      signingKey: caKey,
      signingAlgorithm: SIGNING_ALGORITHM,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
        subjectAltNames(hosts),
        await x509.AuthorityKeyIdentifierExtension.create(caCert, false, crypto),
      ],
    },
    crypto,
  );
  return { certPem: cert.toString('pem') + '\n', keyPem: await keyToPem(keys.privateKey) };
}

/**
 * A serving certificate that is its own CA (`serve`'s offline default: what curl pins and what a
 * caBundle can hold), for `hosts` (DNS names or IP addresses), backdated 5 minutes.
 */
export async function createSelfSignedServing(
  options: IssueOptions & { commonName: string; hosts: readonly string[] },
): Promise<PemPair> {
  const keys = await generateKeys();
  const cert = await x509.X509CertificateGenerator.createSelfSigned(
    {
      serialNumber: randomSerial(),
      name: `CN=${options.commonName}`,
      notBefore: new Date(options.now.getTime() - 5 * 60_000),
      notAfter: new Date(options.now.getTime() + options.validityMs),
      keys,
      signingAlgorithm: SIGNING_ALGORITHM,
      extensions: [
        new x509.BasicConstraintsExtension(true, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyCertSign, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
        subjectAltNames(options.hosts),
      ],
    },
    crypto,
  );
  return { certPem: cert.toString('pem') + '\n', keyPem: await keyToPem(keys.privateKey) };
}

function subjectAltNames(hosts: readonly string[]): x509.SubjectAlternativeNameExtension {
  return new x509.SubjectAlternativeNameExtension(
    hosts.map((h) => (isIP(h) ? { type: 'ip' as const, value: h } : { type: 'dns' as const, value: h })),
  );
}

async function generateKeys(): Promise<CryptoKeyPair> {
  return (await subtle.generateKey(KEY_ALGORITHM, true, ['sign', 'verify'])) as CryptoKeyPair;
}

async function keyToPem(key: CryptoKey): Promise<string> {
  const der = await subtle.exportKey('pkcs8', key);
  return x509.PemConverter.encode(der, 'PRIVATE KEY') + '\n';
}

/** The CA key as WebCrypto wants it; any PEM form node reads (PKCS#8, SEC1) is accepted. */
async function importPrivateKey(pem: string): Promise<CryptoKey> {
  const der = createPrivateKey(pem).export({ format: 'der', type: 'pkcs8' });
  return subtle.importKey('pkcs8', der, KEY_ALGORITHM, false, ['sign']);
}

/** 16 random bytes with the top bit clear: a positive serial, unique per certificate. */
function randomSerial(): string {
  const bytes = webcrypto.getRandomValues(new Uint8Array(16));
  bytes[0] &= 0x7f;
  return Buffer.from(bytes).toString('hex');
}
