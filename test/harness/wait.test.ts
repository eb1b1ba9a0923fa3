// The harness's port choice: a port one test process chose is not chosen by another until its
// mark is stale (the matrix runs two `node --test` processes side by side).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { utimesSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { freePorts, RESERVATIONS, reserve } from './wait.ts';

const wait = fileURLToPath(new URL('./wait.ts', import.meta.url));
/** reserve(port) in another process, as the matrix's other run would. */
const reserveElsewhere = (port: number): boolean =>
  spawnSync(process.execPath, ['-e', `import(${JSON.stringify(wait)}).then((m) => console.log(m.reserve(${port})))`], {
    encoding: 'utf8',
  }).stdout.trim() === 'true';

describe('freePorts: one port, one test process', () => {
  it('a port chosen here is refused to another process while its mark is fresh, and given once it is stale', async () => {
    const [port] = await freePorts(1);
    assert.equal(reserveElsewhere(port), false, 'fresh: taken');
    const old = new Date(Date.now() - 10 * 60_000);
    utimesSync(path.join(RESERVATIONS, String(port)), old, old);
    assert.equal(reserveElsewhere(port), true, 'stale: replaced');
    assert.equal(reserve(port), false, 'and now taken again, for this process too');
  });

  it('gives distinct ports in one call and across calls', async () => {
    const ports = [...(await freePorts(20)), ...(await freePorts(20))];
    assert.equal(new Set(ports).size, 40);
  });
});
