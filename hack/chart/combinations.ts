// The chart's values that choose what is installed (layout, certificates, mutatingWebhook,
// crdPatchRestorer.enabled, networkPolicy.enabled), every
// valid combination of them, and the kustomization that installs each one from manifests/: the
// overlay itself where manifests/ has one, otherwise the components put together the way
// docs/install.md tells a user to (`components/mutating` before `components/cert-manager`, the
// cert-manager overlay's replacements for the namespace, the CRD patch restorer's component last,
// after components/separate-reconciler, the network policy's after all). Both the chart generator and the test
// that compares the chart with kustomize take the kustomize side from here.

export const LAYOUTS = ['sidecar', 'separate-reconciler', 'vap'] as const;
export const CERTIFICATES = ['rotation', 'cert-manager'] as const;
export type Layout = (typeof LAYOUTS)[number];
export type Certificates = (typeof CERTIFICATES)[number];

/** One install: the values the chart chooses by. */
export interface Combination {
  layout: Layout;
  certificates: Certificates;
  mutatingWebhook: boolean;
  /** `crdPatchRestorer.enabled`: `reconcile --restore-crd-patch` and its rights. */
  crdPatchRestorer: boolean;
  /** `networkPolicy.enabled`: components/network-policy. */
  networkPolicy: boolean;
}

/** The chart's default layout, manifests/ itself: the reconciler as its own Deployment. */
export const DEFAULT_LAYOUT: Layout = 'separate-reconciler';

/**
 * Every combination the values schema admits: VAP mode has no webhook, so neither a certificate
 * mode nor the mutating webhook, and no CRD patch to restore (its CRD carries the lift: docs/versions.md,
 * "The CRD patch restorer"); it counts once per network policy choice, with the defaults of the other
 * three (the network policy selects the reconciler's pods in every layout).
 */
export function combinations(): Combination[] {
  const all = [false, true].flatMap((networkPolicy) =>
    [false, true].flatMap((crdPatchRestorer) =>
      LAYOUTS.flatMap((layout) =>
        CERTIFICATES.flatMap((certificates) =>
          [false, true].map((mutatingWebhook) => ({
            layout,
            certificates,
            mutatingWebhook,
            crdPatchRestorer,
            networkPolicy,
          })),
        ),
      ),
    ),
  );
  return all.filter(
    (c) => c.layout !== 'vap' || (c.certificates === 'rotation' && !c.mutatingWebhook && !c.crdPatchRestorer),
  );
}

/**
 * A short name: `sidecar/rotation`, `separate-reconciler/cert-manager/mutating/crd-patch-restorer`,
 * `vap`, `vap/network-policy`.
 */
export function combinationName(c: Combination): string {
  const policy = c.networkPolicy ? ['network-policy'] : [];
  if (c.layout === 'vap') return ['vap', ...policy].join('/');
  return [
    c.layout,
    c.certificates,
    ...(c.mutatingWebhook ? ['mutating'] : []),
    ...(c.crdPatchRestorer ? ['crd-patch-restorer'] : []),
    ...policy,
  ].join('/');
}

/** The chart's `--set` flags for a combination (the defaults left out). */
export function helmSetFlags(c: Combination): string[] {
  const sets = [
    ...(c.layout === DEFAULT_LAYOUT ? [] : [`layout=${c.layout}`]),
    ...(c.certificates === 'rotation' ? [] : [`certificates=${c.certificates}`]),
    ...(c.mutatingWebhook ? ['mutatingWebhook=true'] : []),
    ...(c.crdPatchRestorer ? ['crdPatchRestorer.enabled=true'] : []),
    ...(c.networkPolicy ? ['networkPolicy.enabled=true'] : []),
  ];
  return sets.flatMap((s) => ['--set', s]);
}

/** The folder of manifests/ (relative to it) that is this combination as shipped, where there is one. */
export function shippedOverlay(c: Combination): string | undefined {
  const name = combinationName(c);
  const shipped: Record<string, string> = {
    'separate-reconciler/rotation': '.',
    'separate-reconciler/rotation/mutating': 'overlays/mutating',
    'separate-reconciler/cert-manager': 'overlays/cert-manager',
    'sidecar/rotation': 'overlays/sidecar',
    vap: 'overlays/vap',
  };
  return shipped[name];
}

/** What a user's own overlay may add to a combination: another namespace, another image. */
export interface OverlayOptions {
  /** Relative path from the kustomization's folder to manifests/ (kustomize wants a relative one). */
  manifests: string;
  /** The kustomization's `namespace:` (VAP mode's overlay has none of its own). */
  namespace?: string;
  /** kustomize's images transformer for the project's image `trainjob-webhook`. */
  image?: { newName: string; newTag: string };
  /** overlays/cert-manager's `replacements:`, which carry the namespace into the DNS names and annotations. */
  certManagerReplacements: unknown[];
  /** kustomize's buildMetadata (the generator asks for originAnnotations). */
  buildMetadata?: string[];
}

/** The kustomization of a combination, as a user writes it in a folder of their own. */
export function kustomizationFor(c: Combination, o: OverlayOptions): Record<string, unknown> {
  const at = (rel: string) => `${o.manifests}/${rel}`;
  const resources = c.layout === 'vap' ? [at('rbac/reconciler'), at('vap')] : [at('base')];
  const components = [
    // components/mutating first: components/cert-manager annotates its configuration.
    ...(c.mutatingWebhook ? [at('components/mutating')] : []),
    ...(c.layout === 'vap'
      ? []
      : [at(`components/${c.certificates === 'rotation' ? 'cert-rotation' : 'cert-manager'}`)]),
    ...(c.layout === 'sidecar' ? [] : [at('components/separate-reconciler')]),
    // The restorer's flag goes to the reconciler where it runs: the sidecar, or (after
    // components/separate-reconciler) its own Deployment.
    ...(c.crdPatchRestorer
      ? [at(`components/${c.layout === 'sidecar' ? 'crd-patch-restorer' : 'crd-patch-restorer-separate'}`)]
      : []),
    ...(c.networkPolicy ? [at('components/network-policy')] : []),
  ];
  return {
    apiVersion: 'kustomize.config.k8s.io/v1beta1',
    kind: 'Kustomization',
    ...(o.namespace === undefined ? {} : { namespace: o.namespace }),
    ...(o.buildMetadata ? { buildMetadata: o.buildMetadata } : {}),
    resources,
    components,
    ...(c.layout !== 'vap' && c.certificates === 'cert-manager' ? { replacements: o.certManagerReplacements } : {}),
    ...(o.image ? { images: [{ name: 'trainjob-webhook', ...o.image }] } : {}),
  };
}
