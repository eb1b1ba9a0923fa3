// The rotation's view of the API server: the Secret and the webhook configurations, read and
// written with optimistic concurrency (resourceVersion), and watched by name, so the RBAC can
// name each object (resourceNames) and nothing else is readable.
import type { ApiClient } from '../cluster/api-request.ts';
import { jsonApi } from '../cluster/api-json.ts';
import { followWatch, reportingTo } from '../cluster/api-watch.ts';
import { describeError, orUndefinedIfNotFound, statusCode } from '../cluster/errors.ts';
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

/** The Secret as raw JSON: only what is read here is typed. */
interface Secret {
  metadata?: { resourceVersion?: string; [k: string]: unknown };
  data?: Record<string, unknown>;
  [k: string]: unknown;
}

function decode(secret: Secret): CertMaterial {
  const data = secret.data ?? {};
  const get = (k: string) =>
    typeof data[k] === 'string' ? Buffer.from(data[k], 'base64').toString('utf8') : undefined;
  return { caCrt: get(KEYS.caCrt), caKey: get(KEYS.caKey), tlsCrt: get(KEYS.tlsCrt), tlsKey: get(KEYS.tlsKey) };
}

function encode(m: CertMaterial, into: Record<string, unknown> = {}): Record<string, unknown> {
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

export function kubernetesCertStore(
  client: ApiClient,
  secret: SecretRef,
  webhookConfigs: readonly WebhookConfigRef[],
): CertStore {
  const api = jsonApi(client);
  const secrets = `/api/v1/namespaces/${encodeURIComponent(secret.namespace)}/secrets`;
  const secretPath = `${secrets}/${encodeURIComponent(secret.name)}`;
  const configs = (ref: WebhookConfigRef) =>
    `/apis/admissionregistration.k8s.io/v1/${WEBHOOK_CONFIG_PLURALS[ref.kind]}`;
  let lastSecret: Secret | undefined;

  return {
    async readSecret() {
      const s = (await orUndefinedIfNotFound(api.get(secretPath))) as Secret | undefined;
      lastSecret = s;
      return s ? { material: decode(s), resourceVersion: s.metadata?.resourceVersion ?? '' } : undefined;
    },
    async createSecret(material) {
      await orConflict(
        api.post(secrets, {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: {
            name: secret.name,
            namespace: secret.namespace,
            labels: { 'app.kubernetes.io/name': 'trainjob-webhook' },
          },
          type: 'Opaque',
          data: encode(material),
        }),
      );
    },
    async replaceSecret(material, resourceVersion) {
      // Other keys and metadata of the Secret are kept: only the four certificate keys are ours.
      const base: Secret = lastSecret ?? {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: secret.name, namespace: secret.namespace },
      };
      const body: Secret = {
        ...base,
        metadata: { ...base.metadata, resourceVersion },
        data: encode(material, base.data ?? {}),
      };
      await orConflict(api.put(secretPath, body));
    },
    async readWebhookConfig(ref) {
      return orUndefinedIfNotFound(api.get(`${configs(ref)}/${encodeURIComponent(ref.name)}`));
    },
    async replaceWebhookConfig(ref, config) {
      await orConflict(api.put(`${configs(ref)}/${encodeURIComponent(ref.name)}`, config));
    },
    watch(onChange, onError) {
      const stops = [
        watchByName(client, secrets, secret.name, onChange, onError),
        ...webhookConfigs.map((ref) => watchByName(client, configs(ref), ref.name, onChange, onError)),
      ];
      return () => stops.forEach((s) => s());
    },
  };
}

/** A watch on one object by name, re-established with backoff when it ends. */
function watchByName(
  client: ApiClient,
  path: string,
  name: string,
  onChange: () => void,
  onError: (message: string) => void,
): () => void {
  return followWatch(
    client,
    path,
    { fieldSelector: `metadata.name=${name}` },
    { onEvent: () => onChange(), ...reportingTo(`${path} ${name}`, onError) },
  );
}
