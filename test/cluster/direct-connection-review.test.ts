// Review (s14) of the direct connection (src/cluster/connection.ts) and the in-cluster access
// (src/cluster/kube-access.ts) beside client-go v0.35.8, which they say they follow:
//
// 1. A token file read empty: client-go's fileTokenSource refuses it ("read empty token from file",
//    transport/token_source.go) and its cachingTokenSource keeps the last good token; at start an
//    empty token is an error. Here cachedFile() takes the empty read as the new value and caches it
//    for a minute: every call goes out without Authorization (anonymous, 401/403) until the next
//    re-read. A token file written in place (truncate, then write) by an agent is read empty now and
//    then.
// 2. A client certificate and key re-read as they rotate are read as two files, each kept or
//    replaced on its own: a re-read between the writes of the certificate and of the key hands TLS
//    a certificate with the other key ("key values mismatch"), and every new connection fails until
//    the next re-read a minute later. client-go reloads the pair together and keeps the last pair
//    that loads (transport/cert_rotation.go: tls.LoadX509KeyPair, the old certificate kept on error).
// 3. In a pod, rest.InClusterConfig always speaks https ("https://" + net.JoinHostPort(host, port),
//    rest/config.go); inClusterAccess() follows client-node instead and picks plain http on ports
//    80, 8080 and 8001, where no credentials are sent (rightly), so every call is anonymous.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createSecureContext } from 'node:tls';
import { after, before, describe, it } from 'node:test';
import { directConnection, REREAD_MS } from '../../src/cluster/connection.ts';
import { inClusterAccess } from '../../src/cluster/kube-access.ts';
import { createCA, issueClientCert, type CertificateAuthority } from '../harness/pki.ts';

describe('review: files re-read as they rotate, and in-cluster access, against client-go', () => {
  let dir = '';
  let ca: CertificateAuthority;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'tjw-direct-review-'));
    ca = await createCA();
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('a token file read empty keeps the last good token (client-go: "read empty token", the cached token kept)', async () => {
    const tokenFile = path.join(dir, 'token');
    await writeFile(tokenFile, 'good-token\n');
    let clock = 0;
    const connection = directConnection({ server: 'https://127.0.0.1:6443', tokenFile, insecureSkipTlsVerify: false }, () => clock);
    assert.equal((await connection.material()).headers.authorization, 'Bearer good-token');
    await writeFile(tokenFile, ''); // caught between the truncation and the write
    clock += REREAD_MS + 1;
    assert.equal((await connection.material()).headers.authorization, 'Bearer good-token', 'no call goes out anonymous');
  });

  it('a certificate re-read before its key is written keeps the last pair that loads (client-go: tls.LoadX509KeyPair, old pair kept)', async () => {
    const [first, second] = [await issueClientCert(ca, 'first'), await issueClientCert(ca, 'second')];
    const cert = path.join(dir, 'client.crt');
    const key = path.join(dir, 'client.key');
    await writeFile(cert, first.certPem);
    await writeFile(key, first.keyPem);
    let clock = 0;
    const connection = directConnection({ server: 'https://127.0.0.1:6443', cert: { file: cert }, key: { file: key }, insecureSkipTlsVerify: false }, () => clock);
    const usable = async () => {
      const { tls } = await connection.material();
      createSecureContext({ cert: tls.cert, key: tls.key }); // throws "key values mismatch" for a torn pair
      return tls.cert!.toString();
    };
    assert.equal(await usable(), first.certPem);
    await writeFile(cert, second.certPem); // the rotation wrote the certificate; the key comes next
    clock += REREAD_MS + 1;
    assert.equal(await usable(), first.certPem, 'the torn pair is not used; the last good one is');
    await writeFile(key, second.keyPem);
    clock += REREAD_MS + 1;
    assert.equal(await usable(), second.certPem, 'the new pair once both files are written');
  });

  for (const port of ['80', '8080', '8001']) {
    it(`in a pod whose KUBERNETES_SERVICE_PORT is ${port}, the API server is reached over https, as rest.InClusterConfig does`, () => {
      assert.equal(inClusterAccess('10.96.0.1', port).server, `https://10.96.0.1:${port}`);
    });
  }
});
