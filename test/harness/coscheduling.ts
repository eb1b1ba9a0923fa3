// scheduler-plugins' kube-scheduler (v0.35.4-devel, the version Trainer v2.3.0 requires) beside the
// world's default scheduler, with one profile: the Coscheduling plugin (gang scheduling by the
// PodGroup CRD `scheduling.x-k8s.io/v1alpha1`), as upstream's manifests/coscheduling config has it.
// Pods that name COSCHEDULING_SCHEDULER are its; a PodGroup whose minMember exceeds the pods of
// its group keeps them all Pending (PreFilter: not enough sibling pods). Its PodGroup CRD must be
// installed before it (and before Trainer) starts.
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'yaml';
import { ensureCoschedulingBinaries } from './availability.ts';
import type { CoschedulingBinaries } from './binaries.ts';
import type { ControlPlane } from './controlplane.ts';
import { schedulerArgs } from './flags.ts';
import type { TrackedProcess } from './process.ts';
import { freePort, httpsGet, waitFor } from './wait.ts';

/** The schedulerName of the Coscheduling profile (upstream's install chart names it so). */
export const COSCHEDULING_SCHEDULER = 'scheduler-plugins-scheduler';

export async function startCoscheduler(
  cp: ControlPlane,
  bins?: CoschedulingBinaries,
  timeoutMs = 60_000,
): Promise<TrackedProcess> {
  const { scheduler } = bins ?? (await ensureCoschedulingBinaries());
  const port = await freePort();
  const cert = await cp.issueServingCert('coscheduling-scheduler');
  const dir = await cp.tempDir('coscheduling');
  const config = path.join(dir, 'scheduler-config.yaml');
  await writeFile(
    config,
    stringify({
      apiVersion: 'kubescheduler.config.k8s.io/v1',
      kind: 'KubeSchedulerConfiguration',
      leaderElection: { leaderElect: false },
      clientConnection: { kubeconfig: cp.kubeconfigPath },
      profiles: [
        {
          schedulerName: COSCHEDULING_SCHEDULER,
          plugins: {
            multiPoint: { enabled: [{ name: 'Coscheduling' }] },
            queueSort: { enabled: [{ name: 'Coscheduling' }], disabled: [{ name: '*' }] },
          },
          pluginConfig: [{ name: 'Coscheduling', args: { permitWaitingTimeSeconds: 10 } }],
        },
      ],
    }),
  );
  // The flags the world's scheduler gets, minus --leader-elect (the config file says it), plus the config.
  const args = [
    ...schedulerArgs({ port, kubeconfig: cp.kubeconfigPath, servingCert: cert.certFile, servingKey: cert.keyFile }),
  ].filter((a) => !a.startsWith('--leader-elect') && !a.startsWith('--kubeconfig'));
  const proc = cp.startProcess('coscheduling-scheduler', scheduler, [...args, `--config=${config}`], {
    env: cp.childEnv(),
  });
  await waitFor(
    'coscheduling scheduler /readyz',
    async () => (await httpsGet(`https://127.0.0.1:${port}/readyz`, { ca: cert.caPem })).status === 200,
    { timeoutMs, process: proc },
  );
  return proc;
}
