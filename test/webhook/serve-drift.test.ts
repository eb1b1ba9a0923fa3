// `serve` as a real process with a CRD in force whose spec.trainer has a field the applied CRD
// patch does not name: the drift check logs a warning naming it and exports the count.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import fastJsonPatch, { type Operation } from 'fast-json-patch';
import { parse } from 'yaml';
import { crdPatchOps } from '../../src/rules/generate/crd-patch.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const BIN = path.join(ROOT, 'bin/trainjob-webhook.js');

/** Starts `serve --crd FILE`, resolves the log lines up to `serving` and the ops URL; killed after the test. */
async function serveWith(crdFile: string, cwd: string): Promise<{ lines: Record<string, unknown>[]; opsUrl: string }> {
  const child = spawn(
    process.execPath,
    [BIN, 'serve', '--port', '0', '--ops-port', '0', '--host', '127.0.0.1', '--offline', '--crd', crdFile],
    { cwd, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  after(() => child.kill('SIGKILL'));
  const lines: Record<string, unknown>[] = [];
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`serve exited with ${code}`)));
    createInterface({ input: child.stdout }).on('line', (text) => {
      let line: Record<string, unknown>;
      try {
        line = JSON.parse(text) as Record<string, unknown>;
      } catch {
        return;
      }
      lines.push(line);
      if (line.msg === 'serving') resolve({ lines, opsUrl: String(line.ops) });
    });
  });
}

const gauge = async (opsUrl: string) =>
  (await (await fetch(`${opsUrl}/metrics`)).text()).match(/^trainjob_webhook_trainer_fields_uncovered (\d+)$/m)?.[1];

describe('serve: the drift check', { timeout: 60_000 }, () => {
  it('a CRD whose spec.trainer has a field the shipped patch does not cover: a warning naming it, the gauge at 1', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'tjw-drift-'));
    after(() => rm(dir, { recursive: true, force: true }));
    const upstream = parse(
      await readFile(path.join(ROOT, 'upstream/crds/trainer-v2.3.0/trainer.kubeflow.org_trainjobs.yaml'), 'utf8'),
    );
    const shipped = crdPatchOps(upstream.spec.versions[0].schema.openAPIV3Schema) as Operation[];
    upstream.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.trainer.properties.priorityClassName = {
      type: 'string',
    };
    const crdFile = path.join(dir, 'later-patched.json');
    await writeFile(crdFile, JSON.stringify(fastJsonPatch.applyPatch(upstream, shipped, true, false).newDocument));

    const later = await serveWith(crdFile, dir);
    const warning = later.lines.find((l) =>
      /^spec\.trainer fields the TrainJob CRD's rules do not cover/.test(String(l.msg)),
    );
    assert.deepEqual(warning?.fields, ['spec.trainer.priorityClassName']);
    assert.equal(warning?.crd, crdFile);
    assert.equal(await gauge(later.opsUrl), '1');
  });
});
