// Every right the manifests grant, per process, with the source file whose request needs it and a
// piece of that file's text that makes the request (test/e2e/install-rights.test.ts checks the
// text is there, and that each rendered account holds exactly the rights of the processes that run
// under it: a right no code path uses fails the test, and so does an entry no layout grants).
// Rights are written as `kubectl auth can-i --list` shows them (install-rights.ts showAsCanI).

/** [file under the project, text in it that makes the request]. */
export type Use = readonly [file: string, text: string];

const CLUSTER = 'src/reconciler/cluster.ts';
const SCALE_CHECK = 'src/scale/reads/scale-check.ts';
const LEASE_NAME = 'leases.coordination.k8s.io[trainjob-webhook-reconciler]';
const CRD_NAME = 'customresourcedefinitions.apiextensions.k8s.io[trainjobs.trainer.kubeflow.org]';
const WEBHOOK_CONFIGS = ['validating', 'mutating'].map(
  (k) => `${k}webhookconfigurations.admissionregistration.k8s.io[trainjob-webhook-${k}]`,
);

/** `serve`: the count change's judgment, the CRD it follows, the runtimes it caches. */
export const WEBHOOK: Record<string, Use> = {
  [`get ${CRD_NAME}`]: ['src/webhook/crd-follower.ts', 'export async function readCrd'],
  [`watch ${CRD_NAME}`]: ['src/webhook/crd-follower.ts', 'export function followCrd'],
  'list jobs.batch': ['src/scale/reads/jobset-read.ts', 'client.request(path, { signal, maxBytes })'],
  'get jobsets.jobset.x-k8s.io': [SCALE_CHECK, 'JOBSET'],
  'get trainjobs.trainer.kubeflow.org': [
    'src/scale/reads/trainjob-read.ts',
    'const { group, version, plural } = TRAINJOB',
  ],
  'get trainingruntimes.trainer.kubeflow.org': [SCALE_CHECK, '= TRAINING_RUNTIME'],
  'get clustertrainingruntimes.trainer.kubeflow.org': [SCALE_CHECK, '= CLUSTER_TRAINING_RUNTIME'],
  'list clustertrainingruntimes.trainer.kubeflow.org': ['src/scale/reads/runtime-watch.ts', 'list+watch'],
  'watch clustertrainingruntimes.trainer.kubeflow.org': ['src/scale/reads/runtime-watch.ts', 'list+watch'],
  [`get ${LEASE_NAME}`]: [SCALE_CHECK, '/leases/${seg(lease.name)}'],
  [`watch ${LEASE_NAME}`]: ['src/scale/reads/lease-watch.ts', '/leases`'],
};

/** `serve --cert-rotation`: the certificate Secret and the caBundle of both configurations. */
export const CERT_ROTATION: Record<string, Use> = {
  'get secrets[trainjob-webhook-cert]': ['src/certs/store.ts', 'api.get(secretPath)'],
  'watch secrets[trainjob-webhook-cert]': ['src/certs/store.ts', 'followWatch'],
  'update secrets[trainjob-webhook-cert]': ['src/certs/store.ts', 'api.put(secretPath, body)'],
  ...Object.fromEntries(
    WEBHOOK_CONFIGS.flatMap((c) => [
      [`get ${c}`, ['src/certs/store.ts', 'api.get(`${configs(ref)}']],
      [`watch ${c}`, ['src/certs/store.ts', 'watchByName(client, configs(ref)']],
      [`update ${c}`, ['src/certs/store.ts', 'api.put(`${configs(ref)}']],
    ]),
  ),
};

/** `reconcile`. */
export const RECONCILER: Record<string, Use> = {
  'create leases.coordination.k8s.io': ['src/reconciler/lease.ts', 'api.post(leases, body)'],
  [`get ${LEASE_NAME}`]: ['src/reconciler/lease.ts', 'api.get(ref)'],
  [`update ${LEASE_NAME}`]: ['src/reconciler/lease.ts', 'api.put(ref'],
  [`list ${CRD_NAME}`]: ['src/reconciler/trainer-line-source.ts', 'resourcePath(CORE.crds)'],
  [`watch ${CRD_NAME}`]: ['src/reconciler/trainer-line-source.ts', 'resourcePath(CORE.crds)'],
  'get trainjobs.trainer.kubeflow.org': [CLUSTER, 'api.get(at(TRAINJOB, namespace, name))'],
  'list trainjobs.trainer.kubeflow.org': ['src/reconciler/watches.ts', 'informer<TrainJob>('],
  'watch trainjobs.trainer.kubeflow.org': ['src/reconciler/watches.ts', 'informer<TrainJob>('],
  'patch trainjobs.trainer.kubeflow.org': [CLUSTER, 'api.mergePatch(withQuery(trainJobAt(trainJob), managed)'],
  'patch trainjobs.trainer.kubeflow.org/status': [CLUSTER, "trainJobAt(trainJob, 'status')"],
  // Checked by OwnerReferencesPermissionEnforcement when standalone mode applies a JobSet whose
  // owner reference to the TrainJob sets blockOwnerDeletion.
  'update trainjobs.trainer.kubeflow.org/finalizers': [
    'src/rebuild/trainer-jobset/jobset.ts',
    'blockOwnerDeletion: true',
  ],
  'get trainingruntimes.trainer.kubeflow.org': [CLUSTER, 'TRAINING_RUNTIME'],
  'get clustertrainingruntimes.trainer.kubeflow.org': [CLUSTER, 'CLUSTER_TRAINING_RUNTIME'],
  'get jobsets.jobset.x-k8s.io': [CLUSTER, 'api.get(at(JOBSET, namespace, name))'],
  'list jobsets.jobset.x-k8s.io': ['src/reconciler/watches.ts', 'informer<JobSet>('],
  'watch jobsets.jobset.x-k8s.io': ['src/reconciler/watches.ts', 'informer<JobSet>('],
  'create jobsets.jobset.x-k8s.io': [CLUSTER, "{ dryRun: 'All' }"],
  'patch jobsets.jobset.x-k8s.io': [CLUSTER, 'api.jsonPatch(withQuery(at(JOBSET, namespace, name), managed), ops)'],
  'delete jobsets.jobset.x-k8s.io': [CLUSTER, 'api.delete(at(JOBSET, namespace, name)'],
  // Checked by OwnerReferencesPermissionEnforcement when a claim is handed back with blockOwnerDeletion.
  'update jobsets.jobset.x-k8s.io/finalizers': ['src/rebuild/pvc-plan.ts', 'blockOwnerDeletion: true'],
  'list jobs.batch': [CLUSTER, 'items<Job>(client, at(CORE.jobs, namespace)'],
  'watch jobs.batch': ['src/reconciler/watches.ts', 'informer<Job>('],
  'list pods': [CLUSTER, 'items<Pod>(client, at(CORE.pods, namespace)'],
  'list persistentvolumeclaims': [CLUSTER, 'items<PersistentVolumeClaim>(client, at(CORE.pvcs, namespace)'],
  'patch persistentvolumeclaims': [CLUSTER, 'withQuery(at(CORE.pvcs, namespace, patch.name), managed)'],
  'get configmaps': [CLUSTER, 'api.get(at(CORE.configMaps'],
  'create events': [CLUSTER, 'api.post(at(CORE.events, namespace)'],
  'list events': [CLUSTER, 'items<unknown>(client, at(CORE.events, namespace)'],
  'get leaderworkersets.leaderworkerset.x-k8s.io': [
    'src/reconciler/initializer-objects.ts',
    'api.get(pathOf(namespace, ref))',
  ],
  'delete leaderworkersets.leaderworkerset.x-k8s.io': [
    'src/reconciler/initializer-objects.ts',
    'api.delete(pathOf(namespace, ref)',
  ],
  'get serviceaccounts': ['src/reconciler/initializer-objects.ts', 'CORE.serviceAccounts'],
  'delete serviceaccounts': ['src/reconciler/initializer-objects.ts', 'CORE.serviceAccounts'],
  'get podgroups.scheduling.x-k8s.io': [CLUSTER, 'api.get(at(POD_GROUPS[scheduler]'],
  'delete podgroups.scheduling.x-k8s.io': [CLUSTER, 'api.delete(at(POD_GROUPS[scheduler]'],
  'get podgroups.scheduling.volcano.sh': [CLUSTER, 'api.get(at(POD_GROUPS[scheduler]'],
  'delete podgroups.scheduling.volcano.sh': [CLUSTER, 'api.delete(at(POD_GROUPS[scheduler]'],
};

/** `reconcile --restore-crd-patch`. */
export const RESTORER: Record<string, Use> = {
  [`get ${CRD_NAME}`]: ['src/reconciler/crd-patch-restorer.ts', 'CRD_PATH'],
  [`watch ${CRD_NAME}`]: ['src/reconciler/crd-patch-restorer.ts', 'fieldSelector: `metadata.name=${TRAINJOB_CRD}`'],
  [`patch ${CRD_NAME}`]: ['src/reconciler/crd-patch-restorer.ts', 'CRD_PATH'],
};

/** The tables of the processes a container runs, from its name and args. */
export function tablesOf(container: { name: string; args?: string[] }): Record<string, Use>[] {
  const args = container.args ?? [];
  if (container.name === 'webhook') return [WEBHOOK, ...(args.includes('--cert-rotation') ? [CERT_ROTATION] : [])];
  if (container.name === 'reconciler') return [RECONCILER, ...(args.includes('--restore-crd-patch') ? [RESTORER] : [])];
  throw new Error(`a container named ${container.name}: which process is it?`);
}
