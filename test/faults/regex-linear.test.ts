// Every regular expression in the vendored CRDs (CEL matches() in x-kubernetes-validations and
// OpenAPI `pattern`) runs through RE2 (re2js), whose time is linear in the input. Each is fed
// inputs that make a backtracking engine take quadratic or exponential time; with RE2 this file
// finishes in seconds, with JavaScript's RegExp it would not finish at all (the test timeout
// catches that). The webhook path is exercised too: the CRD's own metadata.name rule.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import fc from 'fast-check';
import { parseAllDocuments } from 'yaml';
import { re2Matches } from '../../src/cel/re2.ts';
import { review, trainJob } from '../webhook/fixtures.ts';
import { assertWellFormedAnswer, crdServer, longForm, UPSTREAM_TRAINJOB_CRD } from './support.ts';

const CRD_DIR = path.dirname(UPSTREAM_TRAINJOB_CRD);
const MATCHES = /\.matches\(\s*(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")\s*\)/g;

function yamlFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? yamlFiles(path.join(dir, e.name)) : e.name.endsWith('.yaml') ? [path.join(dir, e.name)] : [],
  );
}

/** Every matches() literal and every `pattern` in the vendored CRDs, with where each is used. */
function vendoredPatterns(): Map<string, Set<string>> {
  const found = new Map<string, Set<string>>();
  const note = (pattern: string, where: string): void =>
    void (found.get(pattern) ?? found.set(pattern, new Set()).get(pattern)!).add(where);
  const visit = (node: unknown, file: string): void => {
    const stack = [node];
    while (stack.length > 0) {
      const v = stack.pop();
      if (v === null || typeof v !== 'object') continue;
      if (Array.isArray(v)) {
        stack.push(...v);
        continue;
      }
      const o = v as Record<string, unknown>;
      if (typeof o.pattern === 'string') note(o.pattern, `${file} pattern`);
      if (typeof o.rule === 'string') {
        // CEL string literals: the pattern is the literal's unescaped text.
        for (const m of o.rule.matchAll(MATCHES)) note((m[1] ?? m[2]).replace(/\\(.)/g, '$1'), `${file} matches()`);
      }
      stack.push(...Object.values(o));
    }
  };
  for (const file of yamlFiles(CRD_DIR)) {
    for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) visit(doc.toJS(), path.relative(CRD_DIR, file));
  }
  return found;
}

const N = longForm() ? 200_000 : 40_000;

/** Inputs that backtracking engines choke on: long runs of what a pattern accepts, then a mismatch. */
function adversarial(pattern: string): string[] {
  const alphabet = [...new Set(pattern.replace(/\\[a-z]|[\\^$()[\]{}|?*+]/gi, '').split(''))].filter((c) => c !== '');
  const runs = ['a', '0', '-', '.', '+', 'a-', '0.', ':/', ...alphabet];
  return runs.flatMap((run) => [
    run.repeat(N / run.length),
    `a${run.repeat(N / run.length)}!`,
    `${run.repeat(N / run.length)}\u0000`,
  ]);
}

describe('regular expressions of the vendored CRDs stay linear (RE2)', { timeout: 120_000 }, () => {
  const patterns = vendoredPatterns();

  it('finds the matches() rules and patterns to check', () => {
    const kinds = [...patterns.values()].flatMap((w) => [...w]);
    assert.ok(
      kinds.some((k) => k.endsWith('matches()')),
      'no matches() rule found',
    );
    assert.ok(
      kinds.some((k) => k.endsWith('pattern')),
      'no pattern found',
    );
    assert.ok(patterns.has('^[a-z]([-a-z0-9]*[a-z0-9])?$'));
  });

  for (const [pattern, where] of patterns) {
    it(`${pattern} (${[...where].sort().join(', ')})`, () => {
      for (const input of adversarial(pattern)) assert.equal(typeof re2Matches(input, pattern), 'boolean');
      fc.assert(
        fc.property(
          fc.string({
            unit: fc.constantFrom(...new Set([...pattern, 'a', '0', '-', '\u00e9', '\ud800'])),
            minLength: 1_000,
            maxLength: 20_000,
          }),
          (s) => {
            assert.equal(typeof re2Matches(s, pattern), 'boolean');
          },
        ),
        { numRuns: longForm() ? 500 : 10 },
      );
    });
  }
});

describe('the CRD rule metadata.name.matches() on hostile names, through the webhook', { timeout: 120_000 }, () => {
  let server: Awaited<ReturnType<typeof crdServer>>;
  before(async () => {
    server = await crdServer();
  });

  // 'a' then N '-' then '!': quadratic for a backtracking [-a-z0-9]*[a-z0-9].
  for (const name of [`a${'-'.repeat(N)}!`, `a${'-'.repeat(N)}`, 'a'.repeat(N), `${'a-'.repeat(N / 2)}\u00e9`]) {
    it(`a name of ${name.length} characters (${JSON.stringify(name.slice(0, 4))}...${JSON.stringify(name.slice(-2))}) is decided in-band`, async () => {
      const answer = await server.validate(JSON.stringify(review('CREATE', { object: trainJob({}, { name }) })));
      assertWellFormedAnswer(answer, 'validate');
      assert.equal(answer.json!.response.allowed, false);
      // The rule ran (CEL is not blocked by the name's own errors): it matched or said why not.
      const dnsLabel =
        /^[a-z]([-a-z0-9]*[a-z0-9])?$/.test(name.slice(0, 100)) && /[a-z0-9]$/.test(name) && !/[^-a-z0-9]/.test(name);
      assert.equal(
        answer.json!.response.status.message.includes('metadata.name must match RFC 1035 DNS label format'),
        !dnsLabel,
      );
    });
  }
});
