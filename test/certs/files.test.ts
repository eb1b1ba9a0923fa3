// The serving files are swapped as a whole (kubelet's ..data layout) and read by the existing
// key pair reader; writing the same material again changes nothing.
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeServingFiles } from '../../src/certs/files.ts';
import { createCa, issueServingCert } from '../../src/certs/authority.ts';
import { readKeyPair } from '../../src/certs/keypair.ts';

const dir = mkdtempSync(join(tmpdir(), 'tjw-certfiles-'));
after(() => rmSync(dir, { recursive: true, force: true }));

async function material() {
  const now = new Date();
  const ca = await createCa({ now, validityMs: 86_400_000 });
  const s = await issueServingCert(ca, ['localhost'], { now, validityMs: 86_400_000 });
  return { caCrt: ca.certPem, tlsCrt: s.certPem, tlsKey: s.keyPem };
}

describe('writeServingFiles', () => {
  it('writes tls.crt, tls.key and ca.crt behind one ..data link, replacing plain files of an earlier layout', async () => {
    writeFileSync(join(dir, 'tls.crt'), 'old plain file');
    const m = await material();
    assert.equal(await writeServingFiles(dir, m), true);
    assert.equal(readlinkSync(join(dir, 'tls.crt')), join('..data', 'tls.crt'));
    assert.equal(readlinkSync(join(dir, 'tls.key')), join('..data', 'tls.key'));
    const pair = await readKeyPair(dir);
    assert.equal(pair.cert.toString(), m.tlsCrt);
    assert.equal(await writeServingFiles(dir, m), false, 'the same material again writes nothing');
  });

  it('a new pair swaps the link and removes the previous version folder', async () => {
    const before = readlinkSync(join(dir, '..data'));
    const m = await material();
    assert.equal(await writeServingFiles(dir, m), true);
    const now = readlinkSync(join(dir, '..data'));
    assert.notEqual(now, before);
    assert.equal((await readKeyPair(dir)).key.toString(), m.tlsKey);
    const versions = readdirSync(dir).filter((f) => f.startsWith('..') && f !== '..data');
    assert.deepEqual(versions, [now]);
  });
});
