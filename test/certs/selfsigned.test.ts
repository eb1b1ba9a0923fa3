import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { checkKeyPair } from '../../src/certs/keypair.ts';
import { ensureSelfSignedCert } from '../../src/certs/selfsigned.ts';

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tjw-tls-'));
  after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

describe('self-signed certificate', () => {
  it('is generated on first start into tls.crt, tls.key and ca.crt, then reused', async () => {
    const dir = join(await tempDir(), 'certs');
    const first = await ensureSelfSignedCert(dir);
    assert.equal(first.generated, true);
    assert.match(first.reason ?? '', /no certificate/);
    const crt = await readFile(join(dir, 'tls.crt'));
    assert.deepEqual(await readFile(join(dir, 'ca.crt')), crt, 'ca.crt is the certificate itself');
    assert.equal((await stat(join(dir, 'tls.key'))).mode & 0o777, 0o600, 'the key is private');

    const x = new X509Certificate(crt);
    assert.match(x.subjectAltName ?? '', /DNS:localhost/);
    assert.match(x.subjectAltName ?? '', /IP Address:127\.0\.0\.1/);
    assert.ok(x.ca, 'usable as its own CA (caBundle, curl --cacert)');
    assert.ok(x.verify(x.publicKey), 'self-signed');
    checkKeyPair(first);

    const second = await ensureSelfSignedCert(dir);
    assert.equal(second.generated, false);
    assert.deepEqual(second.cert, first.cert);
    assert.deepEqual(second.key, first.key);
    assert.deepEqual(await readFile(join(dir, 'tls.crt')), crt);
  });

  it('is replaced when it has expired', async () => {
    const dir = await tempDir();
    const first = await ensureSelfSignedCert(dir);
    const later = new Date(Date.now() + 400 * 86_400_000);
    const second = await ensureSelfSignedCert(dir, { now: later });
    assert.equal(second.generated, true);
    assert.match(second.reason ?? '', /expired/);
    assert.notDeepEqual(second.cert, first.cert);
  });

  it('is replaced when the files are not a usable pair', async () => {
    const dir = await tempDir();
    await ensureSelfSignedCert(dir);
    await writeFile(join(dir, 'tls.key'), 'not a key');
    const again = await ensureSelfSignedCert(dir);
    assert.equal(again.generated, true);
    assert.match(again.reason ?? '', /not a usable pair/);
  });
});
