// Fastify's schema compilers loaded on demand (src/observability/schema-compilers.ts): a server whose
// routes declare no schema never loads Ajv or fast-json-stringify; one that does validates and
// serializes as Fastify's defaults do. One process per test file: the module cache is this file's.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { describe, it } from 'node:test';
import Fastify from 'fastify';
import { lazySchemaCompilers } from '../../src/observability/schema-compilers.ts';

const loaded = (pkg: string) =>
  Object.keys(createRequire(import.meta.url).cache).some((f) => f.includes(`/node_modules/${pkg}/`));

describe('lazySchemaCompilers', () => {
  it('a server without schemas loads neither compiler (Fastify alone loads both when built)', async () => {
    const app = Fastify({ schemaController: lazySchemaCompilers() });
    app.get('/', async () => ({ ok: true }));
    app.post('/echo', async (req) => req.body);
    const res = await app.inject({ method: 'POST', url: '/echo', payload: { a: 1 } });
    assert.deepEqual(res.json(), { a: 1 });
    await app.close();
    assert.equal(loaded('@fastify/ajv-compiler'), false);
    assert.equal(loaded('@fastify/fast-json-stringify-compiler'), false);
    assert.equal(loaded('ajv'), false);
  });

  it('a route with a schema gets the default compilers: the body validated, the reply serialized', async () => {
    const app = Fastify({ schemaController: lazySchemaCompilers() });
    app.post(
      '/n',
      {
        schema: {
          body: { type: 'object', required: ['n'], properties: { n: { type: 'integer' } } },
          response: { 200: { type: 'object', properties: { n: { type: 'integer' } } } },
        },
      },
      async (req) => ({ n: (req.body as { n: number }).n, dropped: 'not in the response schema' }),
    );
    const bad = await app.inject({ method: 'POST', url: '/n', payload: { n: 'x' } });
    assert.equal(bad.statusCode, 400);
    assert.match(bad.json().message, /body\/n must be integer/);
    const good = await app.inject({ method: 'POST', url: '/n', payload: { n: 2 } });
    assert.deepEqual(good.json(), { n: 2 });
    await app.close();
    assert.equal(loaded('@fastify/ajv-compiler'), true);
    assert.equal(loaded('@fastify/fast-json-stringify-compiler'), true);
  });
});
