// docs/cli.md is what `--help` prints (hack/generate-cli-docs.ts): the page equals the generator's
// output now, the generator finds every command, and what it captures is what the binary prints.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { CLI_DOC, cliDoc, cliOutput, commandsOf } from '../../hack/generate-cli-docs.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const run = promisify(execFile);

describe('docs/cli.md', () => {
  it('is what hack/generate-cli-docs.ts generates from --help now (else: npm run generate)', async () => {
    assert.equal(await readFile(path.join(root, CLI_DOC), 'utf8'), await cliDoc());
  });

  it("has a section for each command the top-level usage lists, and those are the CLI's commands", async () => {
    const commands = commandsOf((await cliOutput(['--help'])).out);
    assert.deepEqual(commands, ['serve', 'review', 'rules', 'reconcile', 'settle', 'scale', 'status']);
    const doc = await readFile(path.join(root, CLI_DOC), 'utf8');
    assert.deepEqual(
      [...doc.matchAll(/^## (\S+)$/gm)].map((m) => m[1]),
      commands,
    );
    // A name that is not a command is refused: the list is not the parser's invention.
    assert.equal((await cliOutput(['no-such-command'])).code, 2);
  });

  it('captures exactly what bin/trainjob-webhook.js prints for each --help', async () => {
    const commands = commandsOf((await cliOutput(['--help'])).out);
    for (const args of [['--help'], ...commands.map((c) => [c, '--help'])]) {
      const { stdout } = await run(process.execPath, ['bin/trainjob-webhook.js', ...args], { cwd: root });
      assert.equal(stdout, (await cliOutput(args)).out, args.join(' '));
    }
  });
});
