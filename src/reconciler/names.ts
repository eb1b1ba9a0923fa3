// The reconciler's own names: its field manager, its component on Events, and the Lease it holds.

export const DEFAULT_FIELD_MANAGER = 'trainjob-webhook-reconciler';
/** The component name on Events and the name of the leader-election Lease. */
export const COMPONENT = 'trainjob-webhook-reconciler';
export const LEASE = { group: 'coordination.k8s.io', version: 'v1', plural: 'leases' } as const;
/**
 * The field manager of the CRD patch restorer's writes: its own, so a write shows who made it; it
 * gives back what it took right after (src/rules/crd-patch-ownership.ts), so it owns nothing.
 */
export const CRD_PATCH_RESTORER_FIELD_MANAGER = 'trainjob-webhook-crd-patch-restorer';
