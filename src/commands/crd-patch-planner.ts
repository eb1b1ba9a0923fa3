// What `reconcile --restore-crd-patch` writes, chosen by the command: loaded only with that flag
// (the rule table and the patch generator are not the reconciler's otherwise).
import { crdPatchOps } from '../rules/generate/crd-patch.ts';
import { rulesFor } from '../rules/table.ts';
import { decideCrdPatchRestore } from '../rules/crd-patch-restore.ts';
import { disclaimVersionsOps } from '../rules/crd-patch-ownership.ts';
import type { CrdPatchPlanner } from '../reconciler/crd-patch-restorer.ts';

/**
 * What the CRD patch restorer writes: the patch generated for the CRD it finds, with the rules of
 * the Trainer line the decision finds that CRD is (crdPatchOps, the one generator of
 * manifests/crd-patch/; rulesFor the line: main's every-Failed-is-final rule). Onto an unknown
 * line the decision writes nothing (it only checks whether a patch applied by hand is in force).
 */
export const crdPatchPlanner: CrdPatchPlanner = {
  decide: (crd) => decideCrdPatchRestore(crd, (schema, line, version) => crdPatchOps(schema, rulesFor(line), version)),
  disclaim: disclaimVersionsOps,
};
