// The API client must not load Node's bundled undici (its fetch and WebSocket, ~5 MiB of RSS):
// an ESM import of node:http does, by reading http's lazy WebSocket exports to build the module's
// namespace (bench/PROFILE.md, RSS). Checked in a fresh process, through the reconcile command,
// which reaches the API server only through src/cluster/api-request.ts.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Node's own modules loaded by importing `file` in a fresh process. */
function builtinsLoadedBy(file: string): string[] {
  const url = pathToFileURL(path.join(root, file)).href;
  const out = execFileSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `await import(${JSON.stringify(url)}); console.log(JSON.stringify(process.moduleLoadList))`,
    ],
    { encoding: 'utf8' },
  );
  return JSON.parse(out.trim().split('\n').pop()!) as string[];
}

describe('the API client and undici', () => {
  it('importing the reconcile command loads no undici', () => {
    const undici = builtinsLoadedBy('src/commands/reconcile.ts').filter((m) => m.includes('undici'));
    assert.deepEqual(undici, []);
  });

  it('an ESM import of node:http does (what the test guards against)', () => {
    const out = execFileSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        "await import('node:http'); console.log(process.moduleLoadList.some((m) => m.includes('undici')))",
      ],
      { encoding: 'utf8' },
    );
    assert.equal(out.trim(), 'true');
  });
});
