// The rotation's view of the API server: the Secret and the webhook configurations, read and
// written with optimistic concurrency (resourceVersion), and watched by name, so the RBAC can
// name each object (resourceNames) and nothing else is readable.
import { CoreV1Api, CustomObjectsApi, Watch, type KubeConfig, type V1Secret } from '@kubernetes/client-node';
import { describeError, orUndefinedIfNotFound, statusCode } from '../cluster/client.ts';
import type { CertMaterial } from './assess.ts';
import { WEBHOOK_CONFIG_PLURALS, type WebhookConfigRef } from './inject.ts';

export interface StoredSecret {
  material: CertMaterial;
  resourceVersion: string;
}

/** A write lost to another writer (HTTP 409): re-read and adopt what won. */
export class ConflictError extends Error {
  override name = 'ConflictError';
}

export interface CertStore {
  readSecret(): Promise<StoredSecret | undefined>;
  /** Creates the Secret; ConflictError when it exists already. */
  createSecret(material: CertMaterial): Promise<void>;
  /** Replaces the Secret's certificate keys at `resourceVersion`; ConflictError when it moved on. */
  replaceSecret(material: CertMaterial, resourceVersion: string): Promise<void>;
  readWebhookConfig(ref: WebhookConfigRef): Promise<unknown | undefined>;
  /** Replaces the configuration (its metadata.resourceVersion guards it); ConflictError when it moved on. */
  replaceWebhookConfig(ref: WebhookConfigRef, config: unknown): Promise<void>;
  /** Calls `onChange` whenever one of the watched objects changes; returns a stop function. */
  watch(onChange: () => void, onError: (message: string) => void): () => void;
}

export interface SecretRef {
  namespace: string;
  name: string;
}

const KEYS = { caCrt: 'ca.crt', caKey: 'ca.key', tlsCrt: 'tls.crt', tlsKey: 'tls.key' } as const;

function decode(secret: V1Secret): CertMaterial {
  const data = secret.data ?? {};
  const get = (k: string) => (data[k] === undefined ? undefined : Buffer.from(data[k], 'base64').toString('utf8'));
  return { caCrt: get(KEYS.caCrt), caKey: get(KEYS.caKey), tlsCrt: get(KEYS.tlsCrt), tlsKey: get(KEYS.tlsKey) };
}

function encode(m: CertMaterial, into: Record<string, string> = {}): Record<string, string> {
  const out = { ...into };
  for (const [field, key] of Object.entries(KEYS)) {
    const v = m[field as keyof CertMaterial];
    if (v !== undefined) out[key] = Buffer.from(v).toString('base64');
  }
  return out;
}

async function orConflict<T>(call: Promise<T>): Promise<T> {
  try {
    return await call;
  } catch (err) {
    if (statusCode(err) === 409) throw new ConflictError(describeError(err));
    throw err;
  }
}

export function kubernetesCertStore(kc: KubeConfig, secret: SecretRef, webhookConfigs: readonly WebhookConfigRef[]): CertStore {
  const core = kc.makeApiClient(CoreV1Api);
  // Raw JSON for the configurations: a typed client would drop fields it does not know.
  const custom = kc.makeApiClient(CustomObjectsApi);
  const cfg = (ref: WebhookConfigRef) => ({ group: 'admissionregistration.k8s.io', version: 'v1', plural: WEBHOOK_CONFIG_PLURALS[ref.kind], name: ref.name });
  let lastSecret: V1Secret | undefined;

  return {
    async readSecret() {
      const s = await orUndefinedIfNotFound(core.readNamespacedSecret(secret));
      lastSecret = s;
      return s ? { material: decode(s), resourceVersion: s.metadata?.resourceVersion ?? '' } : undefined;
    },
    async createSecret(material) {
      await orConflict(
        core.createNamespacedSecret({
          namespace: secret.namespace,
          body: { metadata: { name: secret.name, namespace: secret.namespace, labels: { 'app.kubernetes.io/name': 'trainjob-webhook' } }, type: 'Opaque', data: encode(material) },
        }),
      );
    },
    async replaceSecret(material, resourceVersion) {
      // Other keys and metadata of the Secret are kept: only the four certificate keys are ours.
      const base = lastSecret ?? { metadata: { name: secret.name, namespace: secret.namespace } };
      const body: V1Secret = { ...base, metadata: { ...base.metadata, resourceVersion }, data: encode(material, base.data ?? {}) };
      await orConflict(core.replaceNamespacedSecret({ ...secret, body }));
    },
    async readWebhookConfig(ref) {
      return orUndefinedIfNotFound(custom.getClusterCustomObject(cfg(ref)));
    },
    async replaceWebhookConfig(ref, config) {
      await orConflict(custom.replaceClusterCustomObject({ ...cfg(ref), body: config as object }));
    },
    watch(onChange, onError) {
      const stops = [
        watchByName(kc, `/api/v1/namespaces/${secret.namespace}/secrets`, secret.name, onChange, onError),
        ...webhookConfigs.map((ref) => watchByName(kc, `/apis/admissionregistration.k8s.io/v1/${WEBHOOK_CONFIG_PLURALS[ref.kind]}`, ref.name, onChange, onError)),
      ];
      return () => stops.forEach((s) => s());
    },
  };
}

/** A watch on one object by name, re-established with backoff when it ends. */
function watchByName(kc: KubeConfig, path: string, name: string, onChange: () => void, onError: (message: string) => void): () => void {
  let stopped = false;
  let abort: AbortController | undefined;
  let retryMs = 1000;
  const restart = (reason?: string) => {
    if (stopped) return;
    if (reason) onError(`watch on ${path} ${name} ended: ${reason}; retrying in ${retryMs} ms`);
    const delay = retryMs;
    retryMs = Math.min(retryMs * 2, 60_000);
    setTimeout(() => void start(), delay).unref();
  };
  const start = async () => {
    if (stopped) return;
    try {
      abort = await new Watch(kc).watch(
        path,
        { fieldSelector: `metadata.name=${name}`, allowWatchBookmarks: false },
        () => {
          retryMs = 1000;
          onChange();
        },
        (err) => restart(err ? describeError(err) : undefined),
      );
    } catch (err) {
      restart(describeError(err));
    }
  };
  void start();
  return () => {
    stopped = true;
    abort?.abort();
  };
}
