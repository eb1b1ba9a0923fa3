// `serve` as a real process: SIGTERM while the API server holds an idle keep-alive connection.
// A request written on that connection once the shutdown has started is answered (it got
// ECONNRESET before), and the process then exits 0 on its own.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { review } from './fixtures.ts';
import { RawClient } from './raw-client.ts';

const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../bin/trainjob-webhook.js');

describe('serve on SIGTERM', { timeout: 60_000 }, () => {
  it('answers a request on an idle keep-alive connection after the signal, then exits 0', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'tjw-sigterm-'));
    after(() => rm(dir, { recursive: true, force: true }));
    const child = spawn(
      process.execPath,
      [BIN, 'serve', '--port', '0', '--ops-port', '0', '--host', '127.0.0.1', '--table-only', '--offline'],
      { cwd: dir, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    after(() => child.kill('SIGKILL'));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

    // serve logs JSON lines: wait for a message, keeping the lines.
    const lines: Record<string, unknown>[] = [];
    const waiters: Array<() => void> = [];
    createInterface({ input: child.stdout }).on('line', (line) => {
      try {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        return;
      }
      for (const w of waiters.splice(0)) w();
    });
    const logged = async (msg: RegExp): Promise<Record<string, unknown>> => {
      for (;;) {
        const line = lines.find((l) => msg.test(String(l.msg)));
        if (line) return line;
        await new Promise<void>((r) => waiters.push(r));
      }
    };

    const serving = await logged(/^serving$/);
    const port = Number(new URL(String(serving.admission)).port);
    const client = new RawClient(port);
    await client.ready();
    client.send(review('CREATE', { uid: 'before' }));
    assert.equal((await client.response()).status, 200);

    child.kill('SIGTERM');
    await logged(/^shutting down/);
    client.send(review('CREATE', { uid: 'after' }));
    const res = await client.response();
    assert.equal(res.status, 200);
    assert.equal(JSON.parse(res.body).response.uid, 'after');
    assert.equal(res.headers.connection, 'close');
    assert.equal(await client.closed(), 'end');
    assert.equal(await exited, 0);
  });
});
