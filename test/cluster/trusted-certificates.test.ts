// A CA bundle read as Go's CertPool.AppendCertsFromPEM reads it (client-go's rootCertPool,
// transport/transport.go): the CERTIFICATE blocks without headers that parse; other blocks, and a
// CERTIFICATE block that fails x509.ParseCertificate, skipped; none at all is an error
// (crypto/x509/cert_pool.go). The BEGIN line may end in spaces or tabs, and a block cut short
// before a whole one leaves the whole one, as Go's pem.Decode reads them. Node cannot be handed
// such a bundle as is (with a block that does not parse in `ca`, Node trusts none of them: "unable
// to verify the first certificate"), so only the certificates that parse are handed to TLS, and a
// kubeconfig kubectl works with (a bundle carrying one stale or garbled entry among good ones)
// starts serve too. trustedCertificates is the reader; the start-up check (connect.ts) and the
// connection use it.
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { Server } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connectCluster } from '../../src/cluster/connect.ts';
import { trustedCertificates } from '../../src/cluster/connection.ts';
import { createCA, type CertificateAuthority } from '../harness/pki.ts';
import { kubeconfig, tlsApiServer } from './support/loopback.ts';

const subjects = (pem: Buffer) =>
  [...pem.toString('latin1').matchAll(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g)].map(
    (m) => new X509Certificate(m[0]).subject,
  );

describe('trustedCertificates', () => {
  let a = '';
  let b = '';
  before(async () => {
    a = (await createCA('ca-a')).certPem.trim();
    b = (await createCA('ca-b')).certPem.trim();
  });

  const bad = '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----';
  const withHeaders = () =>
    a.replace('-----BEGIN CERTIFICATE-----\n', '-----BEGIN CERTIFICATE-----\nProc-Type: 4,ENCRYPTED\n\n');
  const cases: [string, () => string, string[]][] = [
    ['one certificate', () => a, ['CN=ca-a']],
    [
      'two, with comments and blank lines around them',
      () => `# corporate roots\n${a}\n\n# second\n${b}\n`,
      ['CN=ca-a', 'CN=ca-b'],
    ],
    ['CRLF line endings', () => `${a}\n${b}\n`.replace(/\n/g, '\r\n'), ['CN=ca-a', 'CN=ca-b']],
    [
      'a block that does not parse among good ones (skipped, as Go)',
      () => `${a}\n${bad}\n${b}\n`,
      ['CN=ca-a', 'CN=ca-b'],
    ],
    ['a block with headers (skipped, as Go)', () => `${withHeaders()}\n${b}\n`, ['CN=ca-b']],
    [
      'another PEM type beside a certificate',
      () => `-----BEGIN X509 CRL-----\nAAAA\n-----END X509 CRL-----\n${a}\n`,
      ['CN=ca-a'],
    ],
    [
      'a BEGIN line ending in spaces and a tab (pem.Decode trims them)',
      () => a.replace('-----BEGIN CERTIFICATE-----\n', '-----BEGIN CERTIFICATE-----  \t\n'),
      ['CN=ca-a'],
    ],
    [
      'a block cut short before a whole one (the whole one kept, as pem.Decode)',
      () => `${a.slice(0, a.length / 2)}\n${b}\n`,
      ['CN=ca-b'],
    ],
  ];
  for (const [name, bundle, expected] of cases) {
    it(`keeps ${name}`, () =>
      assert.deepEqual(
        subjects(trustedCertificates(Buffer.from(bundle()))).map((s) => s.trim()),
        expected,
      ));
  }

  for (const [name, bundle] of [
    ['an empty file', ''],
    ['text without PEM', 'not a certificate\n'],
    ['only a block that does not parse', bad],
    ['a certificate cut short', () => a.slice(0, a.length / 2)],
  ] as const) {
    it(`refuses ${name}: no certificate`, () => {
      const text = typeof bundle === 'function' ? bundle() : bundle;
      assert.throws(() => trustedCertificates(Buffer.from(text)), {
        message: 'the certificate authority holds no PEM certificate',
      });
    });
  }
});

describe('a CA bundle at start: connectCluster with a kubeconfig, then a call', () => {
  /** A CERTIFICATE block whose body is no certificate (3 zero bytes): x509.ParseCertificate fails, Go skips it. */
  const GARBLED = '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n';
  let dir = '';
  let ca: CertificateAuthority;
  let server: Server;
  let url = '';

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'tjw-ca-bundle-'));
    ({ ca, server, url } = await tlsApiServer());
  });
  after(async () => {
    server.closeAllConnections();
    server.close();
    await rm(dir, { recursive: true, force: true });
  });

  const kubeconfigFile = async (name: string, cluster: string) => {
    const file = path.join(dir, `${name}.kubeconfig`);
    await writeFile(file, kubeconfig(`server: "${url}", ${cluster}`));
    return file;
  };

  const bundles: [string, () => string][] = [
    ['the garbled block first', () => GARBLED + ca.certPem],
    ['the garbled block last', () => ca.certPem + GARBLED],
  ];
  for (const [name, bundle] of bundles) {
    it(`serve starts and trusts the good certificate, as client-go does (${name}, certificate-authority-data)`, async () => {
      const file = await kubeconfigFile(
        `data-${name.split(' ').at(-1)}`,
        `certificate-authority-data: "${Buffer.from(bundle()).toString('base64')}"`,
      );
      const cluster = await connectCluster({ mode: 'kubeconfig', path: file });
      const res = await cluster!.client.request('/version', { signal: AbortSignal.timeout(10_000), maxBytes: 1024 });
      assert.equal(res.status, 200);
    });
    it(`serve starts and trusts the good certificate, as client-go does (${name}, certificate-authority file)`, async () => {
      const caFile = path.join(dir, `ca-${name.split(' ').at(-1)}.pem`);
      await writeFile(caFile, bundle());
      const file = await kubeconfigFile(`file-${name.split(' ').at(-1)}`, `certificate-authority: "${caFile}"`);
      const cluster = await connectCluster({ mode: 'kubeconfig', path: file });
      const res = await cluster!.client.request('/version', { signal: AbortSignal.timeout(10_000), maxBytes: 1024 });
      assert.equal(res.status, 200);
    });
  }

  // Go's pem.Decode trims spaces and tabs at the end of the BEGIN line (AppendCertsFromPEM accepts
  // it), and Node does too: a block is read whether or not its BEGIN line ends right after the dashes.
  it('a BEGIN line with trailing spaces is read (Go accepts it)', async () => {
    const file = await kubeconfigFile(
      'begin-spaces',
      `certificate-authority-data: "${Buffer.from(ca.certPem.replace('-----BEGIN CERTIFICATE-----', '-----BEGIN CERTIFICATE-----  ')).toString('base64')}"`,
    );
    const cluster = await connectCluster({ mode: 'kubeconfig', path: file });
    const res = await cluster!.client.request('/version', { signal: AbortSignal.timeout(10_000), maxBytes: 1024 });
    assert.equal(res.status, 200);
  });

  it('control: a bundle with no certificate that parses is refused at start in one line (client-go refuses it too: "unable to load root certificates")', async () => {
    const file = await kubeconfigFile(
      'none',
      `certificate-authority-data: "${Buffer.from(GARBLED).toString('base64')}"`,
    );
    await assert.rejects(connectCluster({ mode: 'kubeconfig', path: file }), {
      message: /^--kubeconfig \S+: the TLS material is not usable: [^\n]*$/,
    });
  });
});
