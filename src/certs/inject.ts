// Pure: the caBundle of a webhook configuration. Every webhook of the configuration gets the
// bundle (cert-controller does the same), whether it calls a Service or a URL.
import { isObject } from '../json/object.ts';

export type WebhookConfigKind = 'validating' | 'mutating';

export interface WebhookConfigRef {
  kind: WebhookConfigKind;
  name: string;
}

export const WEBHOOK_CONFIG_PLURALS: Record<WebhookConfigKind, string> = {
  validating: 'validatingwebhookconfigurations',
  mutating: 'mutatingwebhookconfigurations',
};

type Obj = Record<string, unknown>;

/**
 * The configuration with `bundlePem` as every webhook's caBundle, or undefined when every
 * webhook already has it (nothing to write). A configuration without a webhooks list has
 * nothing to inject into.
 */
export function withCaBundle(config: unknown, bundlePem: string): Obj | undefined {
  if (!isObject(config) || !Array.isArray(config.webhooks)) return undefined;
  const caBundle = Buffer.from(bundlePem).toString('base64');
  let changed = false;
  const webhooks = config.webhooks.map((w: unknown) => {
    if (!isObject(w)) return w;
    const clientConfig = isObject(w.clientConfig) ? w.clientConfig : {};
    if (clientConfig.caBundle === caBundle) return w;
    changed = true;
    return { ...w, clientConfig: { ...clientConfig, caBundle } };
  });
  return changed ? { ...config, webhooks } : undefined;
}
