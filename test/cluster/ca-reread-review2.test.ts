// Second review (s14) of 0012357 (files re-read as they rotate, src/cluster/connection.ts). The
// client certificate and key are now read as a pair TLS must accept and an empty token file is
// refused, but the certificate authority, re-read once a minute as well, is taken as read: a CA
// file caught empty or half written (a rotation that is not an atomic rename, a copy in
// progress) becomes the trust of a new pool, and every call fails to verify the API server for
// the next minute. client-go reads the CA once (transport/transport.go loadTLSFiles), so it never
// trusts a torn one; re-reading is ours, and should keep the last CA that holds a certificate, as
// the pair and the token do.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { Server } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { apiClient } from '../../src/cluster/api-request.ts';
import { directConnection, REREAD_MS } from '../../src/cluster/connection.ts';
import { createCA, type CertificateAuthority } from '../harness/pki.ts';
import { tlsApiServer } from './support/loopback.ts';

describe('review 2: a CA file re-read while it is being written', () => {
  let dir = '';
  let ca: CertificateAuthority;
  let server: Server;
  let url = '';

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'tjw-review2-ca-'));
    ({ ca, server, url } = await tlsApiServer());
  });
  after(async () => {
    server.closeAllConnections();
    server.close();
    await rm(dir, { recursive: true, force: true });
  });

  const torn: [string, (pem: string) => string][] = [
    ['empty', () => ''],
    ['half written', (pem) => pem.slice(0, Math.floor(pem.length / 2))],
  ];
  for (const [what, cut] of torn) {
    it(`read ${what}: the last CA that held a certificate stays in use, calls keep verifying the server`, async () => {
      const caFile = path.join(dir, `ca-${what.replace(' ', '-')}.crt`);
      await writeFile(caFile, ca.certPem);
      let now = 1_000_000;
      const api = apiClient(directConnection({ server: url, ca: { file: caFile }, insecureSkipTlsVerify: false }, () => now));
      const call = () => api.request('/version', { signal: AbortSignal.timeout(10_000), maxBytes: 1024 });
      assert.equal((await call()).status, 200, 'with the CA as written');
      await writeFile(caFile, cut(ca.certPem));
      now += REREAD_MS;
      assert.equal((await call()).status, 200, `after the CA file was re-read ${what}`);
    });
  }

  it('a CA file rewritten whole is used from the next re-read (the control case)', async () => {
    const other = await createCA('other');
    const caFile = path.join(dir, 'ca-rotated.crt');
    await writeFile(caFile, ca.certPem);
    let now = 1_000_000;
    const api = apiClient(directConnection({ server: url, ca: { file: caFile }, insecureSkipTlsVerify: false }, () => now));
    const call = () => api.request('/version', { signal: AbortSignal.timeout(10_000), maxBytes: 1024 });
    assert.equal((await call()).status, 200);
    await writeFile(caFile, other.certPem);
    now += REREAD_MS;
    await assert.rejects(call(), 'a CA that did not sign the server, once re-read');
  });
});
