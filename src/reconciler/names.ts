// The reconciler's own names: its field manager, its component on Events, and the Lease it holds.

export const DEFAULT_FIELD_MANAGER = 'trainjob-webhook-reconciler';
/** The component name on Events and the name of the leader-election Lease. */
export const COMPONENT = 'trainjob-webhook-reconciler';
export const LEASE = { group: 'coordination.k8s.io', version: 'v1', plural: 'leases' } as const;
