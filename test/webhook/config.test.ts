import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, parseServeArgs } from '../../src/webhook/config.ts';

describe('parseServeArgs', () => {
  it('defaults: offline, 9443, ops 8081, generated certificate in certs/', () => {
    const c = parseServeArgs([], {});
    assert.equal(c.port, 9443);
    assert.equal(c.opsPort, 8081);
    assert.equal(c.host, undefined, 'every address: dual-stack :: where the host has IPv6, else 0.0.0.0');
    assert.deepEqual(c.tls, { mode: 'generated', dir: 'certs' });
    assert.deepEqual(c.cluster, { mode: 'none' });
    assert.equal(c.handoff, undefined);
    assert.equal(c.logLevel, 'info');
    assert.deepEqual(c.crd, { mode: 'embedded' });
  });

  it('which CRD is checked: --crd, else the API server with cluster access, else the embedded default; --table-only for none', () => {
    const pod = { KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' };
    assert.deepEqual(parseServeArgs([], {}).crd, { mode: 'embedded' });
    assert.deepEqual(parseServeArgs(['--kubeconfig', 'kc'], {}).crd, { mode: 'cluster' });
    assert.deepEqual(parseServeArgs([], pod).crd, { mode: 'cluster' });
    assert.deepEqual(parseServeArgs(['--offline'], pod).crd, { mode: 'embedded' });
    assert.deepEqual(parseServeArgs(['--crd', 'c.yaml', '--kubeconfig', 'kc'], {}).crd, {
      mode: 'file',
      path: 'c.yaml',
    });
    assert.deepEqual(parseServeArgs(['--table-only'], {}).crd, { mode: 'table-only' });
    assert.deepEqual(parseServeArgs(['--table-only', '--kubeconfig', 'kc'], {}).crd, { mode: 'table-only' });
    assert.throws(
      () => parseServeArgs(['--table-only', '--crd', 'c.yaml'], {}),
      (e: Error) => e instanceof ConfigError && /contradict/.test(e.message),
    );
  });

  it('reads every flag', () => {
    const c = parseServeArgs(
      [
        '--port',
        '10443',
        '--ops-port',
        '9090',
        '--host',
        '127.0.0.1',
        '--cert-dir',
        '/tls',
        '--crd',
        'crd.yaml',
        '--kubeconfig',
        'kc',
        '--handoff',
        'http://127.0.0.1:8082/hints',
        '--log-level',
        'debug',
      ],
      {},
    );
    assert.equal(c.port, 10443);
    assert.equal(c.opsPort, 9090);
    assert.equal(c.host, '127.0.0.1');
    assert.deepEqual(c.tls, { mode: 'files', dir: '/tls' });
    assert.deepEqual(c.crd, { mode: 'file', path: 'crd.yaml' });
    assert.deepEqual(c.cluster, { mode: 'kubeconfig', path: 'kc' });
    assert.equal(c.handoff?.url.href, 'http://127.0.0.1:8082/hints');
    assert.equal(c.logLevel, 'debug');
  });

  it('--flag=value form works', () => {
    assert.equal(parseServeArgs(['--port=8443'], {}).port, 8443);
  });

  it('in a pod: in-cluster config unless --kubeconfig or --offline; never a kubeconfig from the environment', () => {
    const pod = {
      KUBERNETES_SERVICE_HOST: '10.96.0.1',
      KUBERNETES_SERVICE_PORT: '443',
      KUBECONFIG: '/home/me/.kube/config',
    };
    assert.deepEqual(parseServeArgs([], pod).cluster, { mode: 'in-cluster', host: '10.96.0.1', port: '443' });
    assert.deepEqual(parseServeArgs(['--offline'], pod).cluster, { mode: 'none' });
    assert.deepEqual(parseServeArgs(['--kubeconfig', 'x'], pod).cluster, { mode: 'kubeconfig', path: 'x' });
    assert.deepEqual(parseServeArgs([], { KUBECONFIG: '/home/me/.kube/config' }).cluster, { mode: 'none' });
  });

  const bad: [string[], RegExp][] = [
    [['--prot', '1'], /Unknown option '--prot'/],
    [['--port', 'abc'], /--port must be a port number \(0-65535\), got "abc"/],
    [['--port', '70000'], /--port must be a port number/],
    [['--port', '-1'], /--port/],
    [['--port', '9000', '--ops-port', '9000'], /--port and --ops-port must differ/],
    [['--log-level', 'loud'], /--log-level must be one of fatal, error, warn, info, debug, trace, silent, got "loud"/],
    [['--handoff', 'not a url'], /--handoff must be an http\(s\) URL/],
    [['--handoff', 'ftp://x/'], /protocol "ftp:"/],
    [['--cert-dir', ''], /--cert-dir needs a value/],
    [['--kubeconfig', 'x', '--offline'], /contradict/],
    [['extra'], /Unexpected argument 'extra'|positional/],
    [['--port'], /argument missing|--port/],
  ];
  for (const [args, message] of bad) {
    it(`rejects ${args.join(' ')}`, () => {
      assert.throws(
        () => parseServeArgs(args, {}),
        (err: unknown) => err instanceof ConfigError && message.test(err.message),
      );
    });
  }
});
