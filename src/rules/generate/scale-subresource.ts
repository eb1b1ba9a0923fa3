// What the CRD patch adds besides rules, so that the standard tools see a TrainJob's node count:
// the `scale` subresource (`kubectl scale`, autoscalers, dashboards: specReplicasPath is
// spec.trainer.numNodes), this project's status field (the count the JobSet is built for, the
// pods' label selector and the rebuild state, written by the reconciler: src/rebuild/status-field.ts)
// and printer columns that show them in `kubectl get trainjobs`. Both the CRD patch and the VAP
// mode's lift add them; the restore undoes them; the restorer strips them before it generates the
// patch again (withoutScaleParts), so a CRD that has them is left as it is.
//
// Why these choices:
// - statusReplicasPath is our own field (status.trainjobWebhook.nodes), never one of Trainer's:
//   Trainer v2.2.1 to main write status as a merge patch of their typed diff (trainjob_controller.go,
//   client.MergeFrom), which leaves a field they do not know as it is.
// - labelSelectorPath: the selector of the JobSet's pods (JobSet labels every pod it makes with
//   jobset.sigs.k8s.io/jobset-name, and Trainer names the JobSet after the TrainJob). Without one an
//   autoscaler reading pod metrics has no pods to read.
// - The columns go before upstream's Age (kubectl's convention: Age last); upstream's State stays.
import { SCALE_SUBRESOURCE, STATUS_FIELD } from '../../api/names.ts';

const VERSION = '/spec/versions/0';
const STATUS_PROPERTIES = `${VERSION}/schema/openAPIV3Schema/properties/status/properties`;
const COLUMNS = `${VERSION}/additionalPrinterColumns`;

/** The schema of status.trainjobWebhook. */
export const STATUS_FIELD_SCHEMA = {
  description:
    'Written by trainjob-webhook (its reconciler): the node count the JobSet is built for, the label selector of its pods, and the state of a JobSet rebuild after a numNodes change.',
  properties: {
    nodes: {
      description:
        "The numNodes the TrainJob's current JobSet is built for (absent while there is no JobSet). The scale subresource's status.replicas.",
      format: 'int32',
      minimum: 0,
      type: 'integer',
    },
    reason: {
      description: 'Why the rebuild waits, is blocked or is not supported, and what to do.',
      maxLength: 32768,
      type: 'string',
    },
    rebuild: {
      description:
        'The state of the JobSet rebuild after a numNodes change: Waiting, Blocked, Rebuilding, Rebuilt or Unsupported (absent: none so far).',
      maxLength: 64,
      type: 'string',
    },
    selector: {
      description: "The label selector of the JobSet's pods, as a string. The scale subresource's status.selector.",
      maxLength: 1024,
      type: 'string',
    },
  },
  type: 'object',
} as const;

/** The printer columns added, in order. */
export const PRINTER_COLUMNS = [
  {
    description: "spec.trainer.numNodes: the nodes asked for (blank: the runtime's default)",
    jsonPath: SCALE_SUBRESOURCE.specReplicasPath,
    name: 'Nodes',
    type: 'integer',
  },
  {
    description: 'The nodes the current JobSet is built for (trainjob-webhook)',
    jsonPath: SCALE_SUBRESOURCE.statusReplicasPath,
    name: 'JobSet',
    type: 'integer',
  },
  {
    description: 'The state of the JobSet rebuild after a numNodes change (trainjob-webhook)',
    jsonPath: `.status.${STATUS_FIELD}.rebuild`,
    name: 'Rebuild',
    type: 'string',
  },
] as const;

/** The scale subresource added. */
export const SCALE = { ...SCALE_SUBRESOURCE } as const;

/** Upstream's Age column: ours go before it. */
const AGE_PATH = '.metadata.creationTimestamp';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** v2.3.0's columns (State, Age), for a patch generated without a CRD. */
const DEFAULT_COLUMNS: readonly unknown[] = [
  { jsonPath: '.status.conditions[-1:].type', name: 'State', type: 'string' },
  { jsonPath: AGE_PATH, name: 'Age', type: 'date' },
];

/** The version's columns (undefined when it has none), or v2.3.0's when no version is given. */
const columnsOf = (version: unknown): unknown[] | undefined => {
  if (version === undefined) return [...DEFAULT_COLUMNS];
  const columns = isObj(version) ? version.additionalPrinterColumns : undefined;
  return Array.isArray(columns) ? columns : undefined;
};

const ageIndex = (columns: unknown[]): number => columns.findIndex((c) => isObj(c) && c.jsonPath === AGE_PATH);

/**
 * The JSON patch ops that add the status field, the columns and the scale subresource to
 * versions[0] (`version`: that version as upstream ships it; without it, v2.3.0's). The Age column
 * is tested where ours go in before it, so the patch fails loudly on columns it was not made for.
 */
export function scaleSubresourceOps(version?: unknown): unknown[] {
  const columns = columnsOf(version);
  const ops: unknown[] = [{ op: 'add', path: `${STATUS_PROPERTIES}/${STATUS_FIELD}`, value: STATUS_FIELD_SCHEMA }];
  if (!columns) ops.push({ op: 'add', path: COLUMNS, value: [...PRINTER_COLUMNS] });
  else {
    const age = ageIndex(columns);
    if (age < 0) ops.push(...PRINTER_COLUMNS.map((value) => ({ op: 'add', path: `${COLUMNS}/-`, value })));
    else
      ops.push(
        { op: 'test', path: `${COLUMNS}/${age}`, value: columns[age] },
        ...PRINTER_COLUMNS.map((value, i) => ({ op: 'add', path: `${COLUMNS}/${age + i}`, value })),
      );
  }
  const hasSubresources = version === undefined || (isObj(version) && isObj(version.subresources));
  ops.push(
    hasSubresources
      ? { op: 'add', path: `${VERSION}/subresources/scale`, value: SCALE }
      : { op: 'add', path: `${VERSION}/subresources`, value: { scale: SCALE } },
  );
  return ops;
}

/** Undoes scaleSubresourceOps on the CRD it was generated for (each part tested before it goes). */
export function undoScaleSubresourceOps(version?: unknown): unknown[] {
  const columns = columnsOf(version);
  const ops: unknown[] = [
    { op: 'test', path: `${VERSION}/subresources/scale`, value: SCALE },
    { op: 'remove', path: `${VERSION}/subresources/scale` },
  ];
  if (!columns) ops.push({ op: 'test', path: COLUMNS, value: PRINTER_COLUMNS }, { op: 'remove', path: COLUMNS });
  else {
    const age = ageIndex(columns);
    const first = age < 0 ? columns.length : age;
    for (let i = PRINTER_COLUMNS.length - 1; i >= 0; i--) {
      const at = `${COLUMNS}/${first + i}`;
      ops.push({ op: 'test', path: at, value: PRINTER_COLUMNS[i] }, { op: 'remove', path: at });
    }
  }
  ops.push(
    { op: 'test', path: `${STATUS_PROPERTIES}/${STATUS_FIELD}`, value: STATUS_FIELD_SCHEMA },
    { op: 'remove', path: `${STATUS_PROPERTIES}/${STATUS_FIELD}` },
  );
  return ops;
}

const isOurColumn = (c: unknown): boolean =>
  isObj(c) && PRINTER_COLUMNS.some((p) => p.name === c.name && p.jsonPath === c.jsonPath);

/**
 * A CRD version as upstream shipped it (for the restorer): our status field, our columns (by name
 * and path) and the scale subresource gone, whatever their content (an older patch's included).
 * Mutates `version`.
 */
export function withoutScaleParts(version: Obj): void {
  const status = (version.schema as { openAPIV3Schema?: { properties?: { status?: { properties?: Obj } } } })
    ?.openAPIV3Schema?.properties?.status?.properties;
  if (isObj(status)) delete status[STATUS_FIELD];
  if (Array.isArray(version.additionalPrinterColumns)) {
    const kept = version.additionalPrinterColumns.filter((c) => !isOurColumn(c));
    if (kept.length > 0) version.additionalPrinterColumns = kept;
    else delete version.additionalPrinterColumns;
  }
  if (isObj(version.subresources)) delete version.subresources.scale;
}
