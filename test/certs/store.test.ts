// The certificate store (src/certs/store.ts) over the request layer, against a loopback server
// standing in for the API server: the paths and bodies it sends, 404 as "not there", 409 as a
// ConflictError, other keys and metadata of the Secret kept on replace, a configuration's unknown
// fields kept (raw JSON), a Secret with non-string data read without a throw, and the watches by
// name. What the real API server does is proven in test/e2e/install-rotation.test.ts.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { apiClient } from '../../src/cluster/api-request.ts';
import { directConnection } from '../../src/cluster/connection.ts';
import { statusCode } from '../../src/cluster/errors.ts';
import { ConflictError, kubernetesCertStore, type CertStore } from '../../src/certs/store.ts';

interface Seen {
  method: string;
  url: string;
  body: unknown;
}
type Handler = (req: IncomingMessage, res: ServerResponse, body: unknown) => void;
const json = (res: ServerResponse, status: number, body: unknown) =>
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
const status = (code: number, message: string) => ({
  kind: 'Status',
  apiVersion: 'v1',
  status: 'Failure',
  message,
  code,
});
const b64 = (s: string) => Buffer.from(s).toString('base64');

describe('certificate store over the request layer', () => {
  let server: Server;
  let store: CertStore;
  let handler: Handler = (_req, res) => json(res, 500, status(500, 'no handler'));
  const seen: Seen[] = [];

  before(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        const body = text ? JSON.parse(text) : undefined;
        seen.push({ method: req.method ?? '', url: req.url ?? '', body });
        handler(req, res, body);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const client = apiClient(
      directConnection({
        server: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
        insecureSkipTlsVerify: false,
      }),
    );
    store = kubernetesCertStore(client, { namespace: 'ns', name: 'cert' }, [
      { kind: 'validating', name: 'v' },
      { kind: 'mutating', name: 'm' },
    ]);
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  it('a Secret that is not there reads as undefined; creating it POSTs the four keys; a 409 is a ConflictError', async () => {
    handler = (_req, res) => json(res, 404, status(404, 'secrets "cert" not found'));
    assert.equal(await store.readSecret(), undefined);
    assert.deepEqual(seen.at(-1), { method: 'GET', url: '/api/v1/namespaces/ns/secrets/cert', body: undefined });
    handler = (_req, res, body) => json(res, 201, body);
    await store.createSecret({ caCrt: 'CA', caKey: 'CAKEY', tlsCrt: 'CRT', tlsKey: 'KEY' });
    assert.equal(seen.at(-1)?.method, 'POST');
    assert.equal(seen.at(-1)?.url, '/api/v1/namespaces/ns/secrets');
    assert.deepEqual((seen.at(-1)?.body as { data: unknown }).data, {
      'ca.crt': b64('CA'),
      'ca.key': b64('CAKEY'),
      'tls.crt': b64('CRT'),
      'tls.key': b64('KEY'),
    });
    handler = (_req, res) => json(res, 409, status(409, 'secrets "cert" already exists'));
    await assert.rejects(
      store.createSecret({ caCrt: 'CA' }),
      (err: Error) => err instanceof ConflictError && err.message === 'HTTP 409: secrets "cert" already exists',
    );
  });

  it('replace keeps the other keys and metadata, sends the resourceVersion; a non-string key reads as absent', async () => {
    const stored = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'cert', namespace: 'ns', resourceVersion: '7', labels: { team: 'a' } },
      type: 'Opaque',
      data: { 'ca.crt': b64('CA'), 'tls.key': 42, other: b64('kept') },
    };
    handler = (_req, res) => json(res, 200, stored);
    assert.deepEqual(await store.readSecret(), {
      material: { caCrt: 'CA', caKey: undefined, tlsCrt: undefined, tlsKey: undefined },
      resourceVersion: '7',
    });
    handler = (_req, res, body) => json(res, 200, body);
    await store.replaceSecret({ tlsCrt: 'NEW', tlsKey: 'NEWKEY' }, '7');
    assert.deepEqual(seen.at(-1), {
      method: 'PUT',
      url: '/api/v1/namespaces/ns/secrets/cert',
      body: {
        ...stored,
        data: { 'ca.crt': b64('CA'), 'tls.key': b64('NEWKEY'), other: b64('kept'), 'tls.crt': b64('NEW') },
      },
    });
    handler = (_req, res) => json(res, 409, status(409, 'the object has been modified'));
    await assert.rejects(store.replaceSecret({ tlsCrt: 'X' }, '7'), ConflictError);
  });

  it('webhook configurations are read and replaced as raw JSON (unknown fields kept); 404 is undefined, 403 an error with its status', async () => {
    const config = {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: 'v', resourceVersion: '3' },
      webhooks: [{ name: 'w', clientConfig: { caBundle: '' }, futureField: { x: 1 } }],
    };
    handler = (_req, res) => json(res, 200, config);
    assert.deepEqual(await store.readWebhookConfig({ kind: 'validating', name: 'v' }), config);
    assert.equal(seen.at(-1)?.url, '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/v');
    handler = (_req, res, body) => json(res, 200, body);
    await store.replaceWebhookConfig({ kind: 'mutating', name: 'm' }, config);
    assert.deepEqual(seen.at(-1), {
      method: 'PUT',
      url: '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/m',
      body: config,
    });
    handler = (_req, res) => json(res, 404, status(404, 'not found'));
    assert.equal(await store.readWebhookConfig({ kind: 'mutating', name: 'm' }), undefined);
    handler = (_req, res) => json(res, 403, status(403, 'forbidden: cannot get'));
    await assert.rejects(
      store.readWebhookConfig({ kind: 'mutating', name: 'm' }),
      (err: unknown) => statusCode(err) === 403,
    );
  });

  // Bounded, and the watches stopped whatever happened: a change that never came held the test
  // (and the watches the file's process) until the 10-minute run timeout.
  it(
    'watches the Secret and both configurations by name; an event of any of them is a change',
    { timeout: 60_000 },
    async (t) => {
      const watched = new Set<string>();
      handler = (req, res) => {
        const url = new URL(req.url ?? '/', 'http://x');
        watched.add(`${url.pathname}?${url.searchParams.get('fieldSelector')}`);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write(`${JSON.stringify({ type: 'ADDED', object: {} })}\n`);
      };
      let changes = 0;
      let stop = () => {};
      t.after(() => stop());
      await new Promise<void>((resolve) => {
        stop = store.watch(
          () => {
            if (++changes === 3) resolve();
          },
          () => {},
        );
      });
      stop();
      assert.deepEqual([...watched].sort(), [
        '/api/v1/namespaces/ns/secrets?metadata.name=cert',
        '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations?metadata.name=m',
        '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations?metadata.name=v',
      ]);
    },
  );
});
