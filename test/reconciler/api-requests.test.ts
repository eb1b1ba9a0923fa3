// describeRequest: the verb and resource of an API request, named as the API server's
// apiserver_request_total names them; countingRequests: every request and watch seen once, as
// sent (against a loopback server), and a counter that throws fails nothing.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { describe, it } from 'node:test';
import { apiClient, countingRequests } from '../../src/cluster/api-request.ts';
import { jsonApi } from '../../src/cluster/api-json.ts';
import { directConnection } from '../../src/cluster/connection.ts';
import { describeRequest, type ApiRequest } from '../../src/reconciler/api-requests.ts';
import { listen } from '../cluster/support/loopback.ts';

const S = 'https://127.0.0.1:6443';
const rows: [string, string, ApiRequest][] = [
  ['GET', `${S}/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/a`, { verb: 'get', resource: 'trainjobs' }],
  ['GET', `${S}/apis/trainer.kubeflow.org/v1alpha1/trainjobs`, { verb: 'list', resource: 'trainjobs' }],
  [
    'GET',
    `${S}/apis/trainer.kubeflow.org/v1alpha1/trainjobs?watch=true&resourceVersion=5`,
    { verb: 'watch', resource: 'trainjobs' },
  ],
  [
    'GET',
    `${S}/apis/batch/v1/namespaces/ns/jobs?labelSelector=jobset.sigs.k8s.io%2Fjobset-name%3Da`,
    { verb: 'list', resource: 'jobs' },
  ],
  ['GET', `${S}/api/v1/namespaces/ns/pods?labelSelector=x`, { verb: 'list', resource: 'pods' }],
  ['GET', `${S}/api/v1/namespaces/ns/configmaps/a-runtime-snapshot`, { verb: 'get', resource: 'configmaps' }],
  [
    'GET',
    `${S}/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes/torch-distributed`,
    { verb: 'get', resource: 'clustertrainingruntimes' },
  ],
  [
    'PATCH',
    `${S}/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/a/status?fieldManager=m&force=true`,
    { verb: 'patch', resource: 'trainjobs/status' },
  ],
  ['DELETE', `${S}/apis/jobset.x-k8s.io/v1alpha2/namespaces/ns/jobsets/a`, { verb: 'delete', resource: 'jobsets' }],
  ['DELETE', `${S}/api/v1/namespaces/ns/pods`, { verb: 'deletecollection', resource: 'pods' }],
  ['POST', `${S}/api/v1/namespaces/ns/events`, { verb: 'create', resource: 'events' }],
  ['PUT', `${S}/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/x`, { verb: 'update', resource: 'leases' }],
  ['GET', `${S}/api/v1/namespaces`, { verb: 'list', resource: 'namespaces' }],
  ['GET', `${S}/api/v1/namespaces/ns`, { verb: 'get', resource: 'namespaces' }],
  ['GET', `${S}/healthz`, { verb: 'get', resource: 'unknown' }],
  ['GET', 'http://[bad', { verb: 'get', resource: 'unknown' }],
];

describe('describeRequest', () => {
  for (const [method, url, want] of rows) {
    it(`${method} ${url.replace(S, '')}: ${want.verb} ${want.resource}`, () =>
      assert.deepEqual(describeRequest(method, url), want));
  }
});

describe('countingRequests', () => {
  it('sees each request and watch once, as sent; the client it wraps is untouched; a throwing counter fails nothing', async () => {
    const server = createServer((req, res) => {
      if (req.url?.includes('watch=true')) res.writeHead(200).end();
      else res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
    const url = `http://127.0.0.1:${await listen(server)}`;
    try {
      const plain = apiClient(directConnection({ server: url, insecureSkipTlsVerify: false }));
      const seen: ApiRequest[] = [];
      const counting = countingRequests(plain, (method, path) => seen.push(describeRequest(method, path)));
      const api = jsonApi(counting);
      await api.get('/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/a');
      await api.delete('/apis/jobset.x-k8s.io/v1alpha2/namespaces/ns/jobsets/a', { preconditions: { uid: 'u' } });
      await api.apply('/apis/jobset.x-k8s.io/v1alpha2/namespaces/ns/jobsets/a', {}, { fieldManager: 'm', force: true });
      (await counting.stream('/api/v1/namespaces/ns/pods?watch=true', AbortSignal.timeout(60_000))).resume();
      await jsonApi(plain).get('/api/v1/pods');
      assert.deepEqual(seen, [
        { verb: 'get', resource: 'trainjobs' },
        { verb: 'delete', resource: 'jobsets' },
        { verb: 'patch', resource: 'jobsets' },
        { verb: 'watch', resource: 'pods' },
      ]);
      const throwing = countingRequests(plain, () => {
        throw new Error('counter broke');
      });
      assert.deepEqual(await jsonApi(throwing).get('/api/v1/pods'), {});
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});
