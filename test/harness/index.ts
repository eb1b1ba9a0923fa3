// The end-to-end harness's public surface, for suites under test/e2e/.
export {
  controlPlaneAvailability,
  upstreamControllersAvailability,
  kueueAvailability,
  ensureControlPlaneBinaries,
  ensureControllerBinaries,
  ensureKueueBinaries,
  coschedulingAvailability,
  ensureCoschedulingBinaries,
  skipUnless,
  type Availability,
} from './availability.ts';
export {
  projectRoot,
  upstreamDir,
  readVersions,
  readVersionsFile,
  currentCell,
  matrixCells,
  isDefaultCell,
  TRAINER_LINES,
  type Cell,
  type TrainerLine,
  locateControlPlaneBinaries,
  locateControllerBinaries,
  locateKueueBinaries,
  locateCoschedulingBinaries,
  type CoschedulingBinaries,
  type Versions,
  type ControlPlaneBinaries,
  type ControllerBinaries,
  type KueueBinaries,
} from './binaries.ts';
export {
  startControlPlane,
  type ControlPlane,
  type ControlPlaneOptions,
  type ServingCert,
  type UserKubeconfig,
} from './controlplane.ts';
export { KubectlError, type KubectlOptions, type KubectlResult } from './kubectl.ts';
export {
  createCA,
  issueServingCert,
  issueClientCert,
  createServiceAccountKeys,
  writeKeyPair,
  type CertificateAuthority,
  type KeyPairPem,
} from './pki.ts';
export type { TrackedProcess, ExitStatus, StartProcessOptions } from './process.ts';
export {
  startUpstreamControllers,
  startJobSetController,
  startTrainerController,
  startKueueController,
  kueueCrds,
  kueueWebhookDocs,
  kueueUpstreamDir,
  upstreamCrds,
  upstreamCrdsOf,
  trainerCrdsDir,
  allUpstreamCrds,
  KUEUE_USER,
  KUEUE_NAMESPACE,
  KUEUE_TRAINJOB_FRAMEWORK,
  type UpstreamController,
  type UpstreamControllers,
  type UpstreamControllersOptions,
  type TrainerClientConnection,
} from './upstream.ts';
export { waitFor, freePort, freePorts, httpsGet, httpGet } from './wait.ts';
export { urlClientConfig, loadKustomizedWebhooks, pointWebhooksAt } from './webhooks.ts';
export {
  nodeObject,
  defaultNodes,
  stagesFile,
  NODE_LABEL,
  STORAGE_CLASS,
  type World,
  type WorldOptions,
  type NodeShape,
} from './world.ts';
export {
  pods,
  isRunningReady,
  isTerminating,
  TRAINING_ANNOTATION,
  TERMINATION_ANNOTATION,
  STAGE_DELAYS,
  type TrainingEnd,
} from './pods.ts';
export { startCoscheduler, COSCHEDULING_SCHEDULER } from './coscheduling.ts';
