// Certificates for a throwaway cluster: one CA, serving and client certificates, and the
// service-account key pair. Built with @peculiar/x509 on Node's WebCrypto, so no openssl CLI
// and no hand-written ASN.1. Exported for suites that must serve webhooks the API server trusts.
import { webcrypto } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import * as x509 from '@peculiar/x509';

/** A serving certificate written to a folder, and the CA that signed it. */
export interface ServingCert {
  dir: string;
  certFile: string;
  keyFile: string;
  certPem: string;
  keyPem: string;
  /** The CA that signed it: the caBundle of a webhook configuration. */
  caPem: string;
}

// Node's WebCrypto types live in node:crypto (the project compiles without the DOM lib).
type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;
x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

// ECDSA P-256 keys are fast to generate and accepted by Go's crypto/tls and by Node.
const EC = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const SIGN = { name: 'ECDSA', hash: 'SHA-256' } as const;
const DAY_MS = 24 * 3600 * 1000;

export interface KeyPairPem {
  certPem: string;
  keyPem: string;
}

export interface CertificateAuthority extends KeyPairPem {
  cert: x509.X509Certificate;
  keys: CryptoKeyPair;
}

export interface ServingCertOptions {
  /** DNS names; default ['localhost']. */
  dnsNames?: string[];
  /** IP addresses; default ['127.0.0.1']. */
  ips?: string[];
}

async function generateKeys(): Promise<CryptoKeyPair> {
  return (await webcrypto.subtle.generateKey(EC, true, ['sign', 'verify'])) as CryptoKeyPair;
}

async function privateKeyPem(key: CryptoKey): Promise<string> {
  const der = await webcrypto.subtle.exportKey('pkcs8', key);
  return x509.PemConverter.encode(der, 'PRIVATE KEY');
}

function subjectName(cn: string, orgs: string[] = []): x509.JsonName {
  // JSON form rather than a DN string: group names such as system:masters contain ':'.
  return [{ CN: [cn] }, ...orgs.map((o) => ({ O: [o] }))];
}

// Backdated by an hour so small clock differences between processes never matter.
function validity(days: number): { notBefore: Date; notAfter: Date } {
  const now = Date.now();
  return { notBefore: new Date(now - 3600 * 1000), notAfter: new Date(now + days * DAY_MS) };
}

export async function createCA(commonName = 'trainjob-webhook-test-ca'): Promise<CertificateAuthority> {
  const keys = await generateKeys();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    name: subjectName(commonName),
    keys,
    signingAlgorithm: SIGN,
    ...validity(30),
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature,
        true,
      ),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { cert, keys, certPem: cert.toString('pem'), keyPem: await privateKeyPem(keys.privateKey) };
}

async function issue(
  ca: CertificateAuthority,
  subject: x509.JsonName,
  extensions: x509.Extension[],
): Promise<KeyPairPem> {
  const keys = await generateKeys();
  const cert = await x509.X509CertificateGenerator.create({
    subject,
    issuer: ca.cert.subject,
    publicKey: keys.publicKey,
    signingKey: ca.keys.privateKey,
    signingAlgorithm: SIGN,
    ...validity(30),
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      await x509.AuthorityKeyIdentifierExtension.create(ca.keys.publicKey),
      ...extensions,
    ],
  });
  return { certPem: cert.toString('pem'), keyPem: await privateKeyPem(keys.privateKey) };
}

/** A TLS server certificate; SANs default to 127.0.0.1 and localhost. */
export async function issueServingCert(
  ca: CertificateAuthority,
  commonName: string,
  opts: ServingCertOptions = {},
): Promise<KeyPairPem> {
  const names: x509.JsonGeneralNames = [
    ...(opts.dnsNames ?? ['localhost']).map((value) => ({ type: 'dns' as const, value })),
    ...(opts.ips ?? ['127.0.0.1']).map((value) => ({ type: 'ip' as const, value })),
  ];
  return issue(ca, subjectName(commonName), [
    new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
    new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
    new x509.SubjectAlternativeNameExtension(names),
  ]);
}

/** A client certificate: the API server reads the user from CN and the groups from O. */
export async function issueClientCert(
  ca: CertificateAuthority,
  user: string,
  groups: string[] = [],
): Promise<KeyPairPem> {
  return issue(ca, subjectName(user, groups), [
    new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
    new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth]),
  ]);
}

/** RSA key pair for signing (private) and verifying (public) service-account tokens. */
export async function createServiceAccountKeys(): Promise<{ publicPem: string; privatePem: string }> {
  const keys = (await webcrypto.subtle.generateKey(
    { name: 'RSASSA-PKCS1-v1_5', modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' },
    true,
    ['sign', 'verify'],
  )) as CryptoKeyPair;
  const spki = await webcrypto.subtle.exportKey('spki', keys.publicKey);
  return { publicPem: x509.PemConverter.encode(spki, 'PUBLIC KEY'), privatePem: await privateKeyPem(keys.privateKey) };
}

/**
 * Writes a key pair as tls.crt / tls.key (the names controller-runtime's webhook server
 * expects in its cert dir) and returns the file paths.
 */
export async function writeKeyPair(
  dir: string,
  pair: KeyPairPem,
  names = { cert: 'tls.crt', key: 'tls.key' },
): Promise<{ certFile: string; keyFile: string }> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const certFile = path.join(dir, names.cert);
  const keyFile = path.join(dir, names.key);
  await writeFile(certFile, pair.certPem);
  await writeFile(keyFile, pair.keyPem, { mode: 0o600 });
  return { certFile, keyFile };
}
