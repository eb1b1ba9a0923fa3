// What one cluster read of the scale check costs through the webhook's request layer
// (src/cluster/api-request.ts) against a real kube-apiserver (no controllers): GETs one after
// another and three at once (as scale-check.ts sends them), with resourceVersion=0, and the TLS
// connections the pool opened. A diagnostic for bench/apiserver.bench.ts's read column.
//
//   flock /tmp/tjw-e2e.lock node bench/profile-reads.ts      (env: N, default 200)
import { connectCluster } from '../src/cluster/connect.ts';
import { startControlPlane, upstreamCrds } from '../test/harness/index.ts';
import { median, percentile } from './lib/stats.ts';
import tls from 'node:tls';

const n = Number(process.env.N ?? 200);
const cp = await startControlPlane({ crds: [upstreamCrds.jobsets], controllerManager: false, world: false });
try {
  let handshakes = 0;
  const connect = tls.connect;
  (tls as { connect: unknown }).connect = (...args: unknown[]) => {
    handshakes++;
    return (connect as (...a: unknown[]) => unknown)(...args);
  };
  const connection = await connectCluster({ mode: 'kubeconfig', path: cp.kubeconfigPath });
  const api = connection!.client;
  const paths = [
    '/apis/jobset.x-k8s.io/v1alpha2/namespaces/default/jobsets/x?resourceVersion=0',
    '/apis/coordination.k8s.io/v1/namespaces/default/leases/x?resourceVersion=0',
    '/apis/batch/v1/namespaces/default/jobs?labelSelector=jobset.sigs.k8s.io%2Fjobset-name%3Dx&resourceVersion=0',
  ];
  const get = async (path: string) => {
    const t0 = performance.now();
    const res = await api.request(path, { signal: AbortSignal.timeout(5000), maxBytes: 1 << 20 });
    if (res.status !== 200 && res.status !== 404) throw new Error(`${path}: HTTP ${res.status}`);
    return performance.now() - t0;
  };
  for (let i = 0; i < 20; i++) await Promise.all(paths.map(get));
  const h0 = handshakes;
  const one: number[] = [];
  for (let i = 0; i < n; i++) one.push(await get(paths[i % 3]));
  const three: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await Promise.all(paths.map(get));
    three.push(performance.now() - t0);
  }
  const f = (s: number[]) => `median ${median(s).toFixed(3)} ms, p99 ${percentile(s, 99).toFixed(3)} ms`;
  process.stdout.write(
    `one GET at a time: ${f(one)}\nthree at once (wall): ${f(three)}\nTLS connections opened while measuring: ${handshakes - h0}\n`,
  );
} finally {
  await cp.stop();
}
