// The kubectl plugin's single executable run as a user runs it: its own process, nothing else on
// PATH (no Node), the user's KUBECONFIG; its exit, stdout and stderr. And the users it runs as: a
// Role each in the namespace, as a batch user gets. For the plugin's e2e suites.
import { spawn, type ChildProcess } from 'node:child_process';
import type { ControlPlane, UserKubeconfig } from '../../harness/index.ts';

export interface PluginRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  out: string;
  err: string;
}

export interface RunOptions {
  /** Called with the stdout so far each time it grows, and the process (to send it a signal). */
  onOut?: (out: string, child: ChildProcess) => void;
  /** The PATH it runs with (default: none at all). */
  path?: string;
  /** A hung run is killed then (it fails its test, not the suite). */
  killAfterMs?: number;
}

/** Runs `bin args` as `user`. */
export function runPlugin(
  cp: ControlPlane,
  bin: string,
  user: UserKubeconfig,
  args: string[],
  { onOut, path = '/nonexistent', killAfterMs = 120_000 }: RunOptions = {},
): Promise<PluginRun> {
  return new Promise((resolve, reject) => {
    const env = cp.childEnv({ KUBECONFIG: user.path, PATH: path });
    const child = spawn(bin, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      onOut?.(out, child);
    });
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, out, err });
    });
  });
}

/** A run as an assertion message shows it. */
export const showRun = (r: PluginRun) => `exit ${r.code}\n--- stdout\n${r.out}\n--- stderr\n${r.err}`;

/** A batch user's rules in a namespace: TrainJobs with these verbs; JobSets and pods read only. */
export const batchUserRules = (trainJobVerbs: string[]) => [
  { apiGroups: ['trainer.kubeflow.org'], resources: ['trainjobs'], verbs: trainJobVerbs },
  { apiGroups: ['jobset.x-k8s.io'], resources: ['jobsets'], verbs: ['get', 'list'] },
  { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list'] },
];

/** For each user, a Role of these rules in `ns` bound to them; their kubeconfigs, in order. */
export async function usersWithRoles(
  cp: ControlPlane,
  ns: string,
  users: { user: string; role: string; rules: object[] }[],
): Promise<UserKubeconfig[]> {
  const docs = users.flatMap(({ user, role, rules }) => [
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: role, namespace: ns }, rules },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: role, namespace: ns },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: role },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
    },
  ]);
  await cp.applyYaml(docs.map((d) => JSON.stringify(d)).join('\n---\n'));
  return Promise.all(users.map(({ user }) => cp.makeUserKubeconfig(user)));
}
