// overlays/separate-reconciler was the reconciler's own Deployment when the sidecar was the
// default; now that manifests/ is that layout, the overlay stays for installs that named it and
// must render exactly what manifests/ renders (kustomize refuses an overlay that points at its
// own ancestor, so it lists the same base and components: this pins that they stay the same).
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { defaultCellEnv, kustomize, manifestsDir, pinnedKubectl } from '../../hack/chart/kustomize.ts';
import { controlPlaneAvailability } from '../harness/index.ts';

const availability = controlPlaneAvailability(defaultCellEnv());

describe('overlays/separate-reconciler', { skip: availability.available ? false : availability.reason }, () => {
  it('renders what manifests/ renders, object for object', async () => {
    const kubectl = pinnedKubectl();
    const [alias, main] = await Promise.all([
      kustomize(kubectl, path.join(manifestsDir, 'overlays/separate-reconciler')),
      kustomize(kubectl, manifestsDir),
    ]);
    assert.ok(main.some((o) => o.kind === 'Deployment' && o.metadata.name === 'trainjob-webhook-reconciler'));
    assert.deepEqual(alias, main);
  });
});
