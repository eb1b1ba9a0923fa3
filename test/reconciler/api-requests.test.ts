// describeRequest: the verb and resource of an API request, named as the API server's
// apiserver_request_total names them; countingKubeConfig: every request seen once.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KubeConfig, RequestContext, HttpMethod } from '@kubernetes/client-node';
import { countingKubeConfig, describeRequest, type ApiRequest } from '../../src/reconciler/api-requests.ts';

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

describe('countingKubeConfig', () => {
  it('sees each authenticated request once and still authenticates it; the original is untouched', async () => {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: S, skipTLSVerify: true }],
      users: [{ name: 'u', token: 't0k' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    const seen: ApiRequest[] = [];
    const counting = countingKubeConfig(kc, (r) => seen.push(r));
    assert.equal(counting.getCurrentCluster()?.server, S);
    const ctx = new RequestContext(`${S}/api/v1/namespaces/ns/pods?watch=true`, HttpMethod.GET);
    await counting.applySecurityAuthentication(ctx);
    assert.deepEqual(seen, [{ verb: 'watch', resource: 'pods' }]);
    assert.equal(ctx.getHeaders().Authorization, 'Bearer t0k');
    await kc.applySecurityAuthentication(new RequestContext(`${S}/api/v1/pods`, HttpMethod.GET));
    assert.equal(seen.length, 1);
  });
});
