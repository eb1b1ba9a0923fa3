// Command lines of the control-plane components, modelled on envtest's
// (controller-runtime pkg/internal/testing/controlplane) and kept pure so they read as a list.

export interface ClusterFiles {
  caCert: string;
  saPublicKey: string;
  saPrivateKey: string;
}

export interface EtcdConfig {
  dataDir: string;
  clientPort: number;
  peerPort: number;
}

export function etcdArgs(c: EtcdConfig): string[] {
  const client = `http://127.0.0.1:${c.clientPort}`;
  return [
    `--data-dir=${c.dataDir}`,
    `--listen-client-urls=${client}`,
    `--advertise-client-urls=${client}`,
    `--listen-peer-urls=http://127.0.0.1:${c.peerPort}`,
    // A throwaway store: durability buys nothing and fsync costs seconds per test run.
    '--unsafe-no-fsync=true',
    '--log-level=warn',
  ];
}

export interface ApiServerConfig extends ClusterFiles {
  port: number;
  etcdUrl: string;
  servingCert: string;
  servingKey: string;
  certDir: string;
}

export function apiServerArgs(c: ApiServerConfig): string[] {
  return [
    `--etcd-servers=${c.etcdUrl}`,
    '--bind-address=127.0.0.1',
    `--secure-port=${c.port}`,
    '--advertise-address=127.0.0.1',
    `--tls-cert-file=${c.servingCert}`,
    `--tls-private-key-file=${c.servingKey}`,
    `--cert-dir=${c.certDir}`,
    // Client certificates signed by the test CA authenticate; RBAC authorizes, so restricted
    // identities (makeUserKubeconfig) are really restricted, and system:masters is admin.
    `--client-ca-file=${c.caCert}`,
    '--authorization-mode=RBAC',
    `--service-account-key-file=${c.saPublicKey}`,
    `--service-account-signing-key-file=${c.saPrivateKey}`,
    `--service-account-issuer=https://127.0.0.1:${c.port}`,
    '--service-cluster-ip-range=10.0.0.0/24',
    // No kubelets or nodes: the apiserver must not try to publish its own endpoints.
    '--endpoint-reconciler-type=none',
    '--allow-privileged=true',
  ];
}

export interface ControllerManagerConfig extends ClusterFiles {
  port: number;
  kubeconfig: string;
  servingCert: string;
  servingKey: string;
}

/** What kube-controller-manager and kube-scheduler share: their kubeconfig, serving on loopback, no leader election. */
function componentArgs(c: SchedulerConfig): string[] {
  return [
    `--kubeconfig=${c.kubeconfig}`,
    '--bind-address=127.0.0.1',
    `--secure-port=${c.port}`,
    `--tls-cert-file=${c.servingCert}`,
    `--tls-private-key-file=${c.servingKey}`,
    '--leader-elect=false',
  ];
}

export function controllerManagerArgs(c: ControllerManagerConfig): string[] {
  return [
    ...componentArgs(c),
    // All default controllers: the Job controller makes pods, the garbage collector finishes
    // foreground deletions, the namespace controller empties deleted namespaces, and the
    // service-account controller creates the `default` account pods need.
    '--controllers=*',
    `--service-account-private-key-file=${c.saPrivateKey}`,
    `--root-ca-file=${c.caCert}`,
  ];
}

export interface SchedulerConfig {
  port: number;
  kubeconfig: string;
  servingCert: string;
  servingKey: string;
}

export function schedulerArgs(c: SchedulerConfig): string[] {
  return componentArgs(c);
}

export interface KwokConfig {
  kubeconfig: string;
  /** The KwokConfiguration plus our Stages (test/harness/kwok/stages.yaml). */
  configFile: string;
  /** Nodes carrying this label are KWOK's to keep alive. */
  nodeLabelSelector: string;
}

export function kwokArgs(c: KwokConfig): string[] {
  return [
    `--kubeconfig=${c.kubeconfig}`,
    `--config=${c.configFile}`,
    `--manage-nodes-with-label-selector=${c.nodeLabelSelector}`,
    // Heartbeats through node Leases (as kubelets do since 1.17), so node lifecycle never
    // taints a fake node unreachable; 40 s is the kubelet's default lease duration.
    '--node-lease-duration-seconds=40',
    // Pod IPs of their own range (not the Service range 10.0.0.0/24).
    '--cidr=10.244.0.0/16',
  ];
}
