// Third review (s14) of d104ff4 (a CA must hold whole PEM certificates): the start-up check
// (connect.ts usableTls -> checkCertificateAuthority) parses every CERTIFICATE block with
// X509Certificate and refuses the whole kubeconfig when one block does not parse. client-go builds
// its pool with x509.CertPool.AppendCertsFromPEM (transport/transport.go rootCertPool), which
// skips a CERTIFICATE block that fails x509.ParseCertificate (and blocks of another type, or with
// headers) and fails only when none parsed (crypto/x509/cert_pool.go). Checked with Go 1.26:
// AppendCertsFromPEM(bad + good) is true and the good certificate is trusted. So a kubeconfig
// kubectl works with (a bundle carrying one stale or garbled entry among good ones) stops serve
// at start ("asn1 encoding routines::wrong tag"). Node itself cannot be handed such a bundle as
// is (with the bad block in `ca`, Node trusts none of them: "unable to verify the first
// certificate", checked), so the fix is to keep the certificates that parse, as Go does.
// 8b649aa (committed while this review ran) does that: these four pass on it (they fail on
// d104ff4/94cb4aa, checked in a scratch copy). The trailing-space BEGIN line is fixed since then too.
//
// Checked and fine (d104ff4): CRLF line ends, comment lines and trailing whitespace
// around blocks, trailing spaces on the BEGIN line, an X509 CRL block next to the certificate;
// a torn block (BEGIN without END) refused; a bundle of no certificate refused at start (the
// control below), as client-go refuses it ("unable to load root certificates").
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { Server } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connectCluster } from '../../src/cluster/connect.ts';
import type { CertificateAuthority } from '../harness/pki.ts';
import { tlsApiServer } from './support/loopback.ts';

/** A CERTIFICATE block whose body is no certificate (3 zero bytes): x509.ParseCertificate fails, Go skips it. */
const GARBLED = '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n';

describe('review 3: a CA bundle with one certificate that does not parse among good ones', () => {
  let dir = '';
  let ca: CertificateAuthority;
  let server: Server;
  let url = '';

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'tjw-review3-ca-'));
    ({ ca, server, url } = await tlsApiServer());
  });
  after(async () => {
    server.closeAllConnections();
    server.close();
    await rm(dir, { recursive: true, force: true });
  });

  const kubeconfig = async (name: string, cluster: string) => {
    const file = path.join(dir, `${name}.kubeconfig`);
    await writeFile(file, `clusters: [{name: k, cluster: {server: "${url}", ${cluster}}}]\ncontexts: [{name: c, context: {cluster: k, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: {token: t}}]\n`);
    return file;
  };

  const bundles: [string, () => string][] = [
    ['the garbled block first', () => GARBLED + ca.certPem],
    ['the garbled block last', () => ca.certPem + GARBLED],
  ];
  for (const [name, bundle] of bundles) {
    it(`serve starts and trusts the good certificate, as client-go does (${name}, certificate-authority-data)`, async () => {
      const file = await kubeconfig(`data-${name.split(' ').at(-1)}`, `certificate-authority-data: "${Buffer.from(bundle()).toString('base64')}"`);
      const cluster = await connectCluster({ mode: 'kubeconfig', path: file });
      const res = await cluster!.client.request('/version', { signal: AbortSignal.timeout(10_000), maxBytes: 1024 });
      assert.equal(res.status, 200);
    });
    it(`serve starts and trusts the good certificate, as client-go does (${name}, certificate-authority file)`, async () => {
      const caFile = path.join(dir, `ca-${name.split(' ').at(-1)}.pem`);
      await writeFile(caFile, bundle());
      const file = await kubeconfig(`file-${name.split(' ').at(-1)}`, `certificate-authority: "${caFile}"`);
      const cluster = await connectCluster({ mode: 'kubeconfig', path: file });
      const res = await cluster!.client.request('/version', { signal: AbortSignal.timeout(10_000), maxBytes: 1024 });
      assert.equal(res.status, 200);
    });
  }

  // A regression of 8b649aa (trustedCertificates, PEM_CERTIFICATE =
  // /-----BEGIN CERTIFICATE-----\r?\n.../): a block is read
  // only when the BEGIN line ends right after its dashes. Go's pem.Decode trims spaces and tabs
  // at the end of the BEGIN line (checked: AppendCertsFromPEM true), Node too, and d104ff4's
  // check accepts it; 8b649aa refuses such a CA at start ("holds no PEM certificate").
  // (Also differs, left untested as rare: a torn block BEFORE a whole one in
  // certificate-authority-data; Go 1.26's pem.Decode takes the last BEGIN before the first END and
  // trusts the whole one, the lazy regex swallows both into one block that does not parse.)
  it('a BEGIN line with trailing spaces is read (Go accepts it; passes on d104ff4)', async () => {
    const file = await kubeconfig('begin-spaces', `certificate-authority-data: "${Buffer.from(ca.certPem.replace('-----BEGIN CERTIFICATE-----', '-----BEGIN CERTIFICATE-----  ')).toString('base64')}"`);
    const cluster = await connectCluster({ mode: 'kubeconfig', path: file });
    const res = await cluster!.client.request('/version', { signal: AbortSignal.timeout(10_000), maxBytes: 1024 });
    assert.equal(res.status, 200);
  });

  it('control: a bundle with no certificate that parses is refused at start in one line (client-go refuses it too)', async () => {
    const file = await kubeconfig('none', `certificate-authority-data: "${Buffer.from(GARBLED).toString('base64')}"`);
    await assert.rejects(connectCluster({ mode: 'kubeconfig', path: file }), { message: /^--kubeconfig \S+: the TLS material is not usable: [^\n]*$/ });
  });
});
