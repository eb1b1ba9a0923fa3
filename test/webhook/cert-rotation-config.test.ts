// serve's certificate rotation flags (src/webhook/config.ts), table-driven.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, parseServeArgs } from '../../src/webhook/config.ts';

const kube = ['--kubeconfig', '/k'];

describe('serve --cert-rotation flags', () => {
  it('defaults: the Secret and the two configurations of the manifests, the Service name in $POD_NAMESPACE', () => {
    const c = parseServeArgs([...kube, '--cert-rotation', '--cert-dir', '/certs'], {
      POD_NAMESPACE: 'kubeflow-system',
    });
    assert.deepEqual(c.certRotation, {
      namespace: 'kubeflow-system',
      secretName: 'trainjob-webhook-cert',
      hosts: ['trainjob-webhook.kubeflow-system.svc'],
      validatingWebhookConfig: 'trainjob-webhook-validating',
      mutatingWebhookConfig: 'trainjob-webhook-mutating',
    });
    assert.deepEqual(c.tls, { mode: 'files', dir: '/certs' });
  });

  it('every flag given; extra names deduplicated and lower-cased; IPs allowed', () => {
    const c = parseServeArgs(
      [
        ...kube,
        '--cert-rotation',
        '--cert-secret',
        's',
        '--cert-namespace',
        'ns',
        '--service-name',
        'hook',
        '--service-dns',
        'Hook.NS.svc, 127.0.0.1,::1,hook.ns.svc',
        '--validating-webhook-config',
        'v',
        '--mutating-webhook-config',
        'm',
      ],
      {},
    );
    assert.deepEqual(c.certRotation, {
      namespace: 'ns',
      secretName: 's',
      hosts: ['hook.ns.svc', '127.0.0.1', '::1'],
      validatingWebhookConfig: 'v',
      mutatingWebhookConfig: 'm',
    });
    assert.deepEqual(
      c.tls,
      { mode: 'files', dir: 'certs' },
      'without --cert-dir the files go to ./certs, read as files',
    );
  });

  it('in a pod (in-cluster access) it needs no kubeconfig', () => {
    const c = parseServeArgs(['--cert-rotation'], {
      KUBERNETES_SERVICE_HOST: '10.0.0.1',
      KUBERNETES_SERVICE_PORT: '443',
      POD_NAMESPACE: 'x',
    });
    assert.equal(c.certRotation?.namespace, 'x');
  });

  it('off by default: the self-signed offline certificate as before', () => {
    const c = parseServeArgs([], {});
    assert.equal(c.certRotation, undefined);
    assert.equal(c.tls.mode, 'generated');
  });

  const errors: [string, string[], Record<string, string>, RegExp][] = [
    ['no cluster access', ['--cert-rotation'], { POD_NAMESPACE: 'x' }, /needs cluster access/],
    [
      '--offline',
      ['--cert-rotation', '--offline'],
      { POD_NAMESPACE: 'x', KUBERNETES_SERVICE_HOST: 'h', KUBERNETES_SERVICE_PORT: '1' },
      /needs cluster access/,
    ],
    ['no namespace', [...kube, '--cert-rotation'], {}, /--cert-namespace or \$POD_NAMESPACE/],
    ['a blank namespace', [...kube, '--cert-rotation'], { POD_NAMESPACE: '  ' }, /--cert-namespace or \$POD_NAMESPACE/],
    [
      'an empty --cert-secret',
      [...kube, '--cert-rotation', '--cert-secret', ''],
      { POD_NAMESPACE: 'x' },
      /--cert-secret needs a value/,
    ],
    [
      'a bad --service-dns entry',
      [...kube, '--cert-rotation', '--service-dns', 'ok.svc,not a name'],
      { POD_NAMESPACE: 'x' },
      /--service-dns: "not a name" is neither/,
    ],
    [
      'a rotation flag without --cert-rotation',
      [...kube, '--cert-secret', 's'],
      {},
      /--cert-secret needs --cert-rotation/,
    ],
    ['--service-dns without --cert-rotation', ['--service-dns', 'a.b'], {}, /--service-dns needs --cert-rotation/],
  ];
  for (const [name, args, env, message] of errors) {
    it(`a clear error: ${name}`, () => {
      assert.throws(
        () => parseServeArgs(args, env),
        (err: Error) => err instanceof ConfigError && message.test(err.message),
      );
    });
  }
});
