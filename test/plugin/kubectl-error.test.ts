// Refusals as kubectl prints them, with the advice for the known causes.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { adviceFor, kubectlMessage, statusOf } from '../../src/plugin/kubectl-error.ts';

const status = (o: Record<string, unknown>) =>
  JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', ...o });

describe('kubectl-style refusals', () => {
  it('Invalid with one cause: "The Kind "name" is invalid: field: message"', () => {
    const s = statusOf(
      422,
      status({
        reason: 'Invalid',
        code: 422,
        message: 'x',
        details: {
          kind: 'TrainJob',
          name: 'llama',
          causes: [{ field: 'spec.trainer.numNodes', message: 'Forbidden: numNodes may only change while suspended' }],
        },
      }),
    );
    assert.equal(
      kubectlMessage(s),
      'The TrainJob "llama" is invalid: spec.trainer.numNodes: Forbidden: numNodes may only change while suspended',
    );
  });
  it('Invalid with two causes: a list', () => {
    const s = statusOf(
      422,
      status({
        reason: 'Invalid',
        details: {
          kind: 'TrainJob',
          name: 'l',
          causes: [
            { field: 'a', message: 'x' },
            { field: 'b', message: 'y' },
          ],
        },
      }),
    );
    assert.equal(kubectlMessage(s), 'The TrainJob "l" is invalid: \n* a: x\n* b: y');
  });
  it('Forbidden, NotFound, ServiceUnavailable: "Error from server (Reason): message"', () => {
    assert.equal(
      kubectlMessage(
        statusOf(404, status({ reason: 'NotFound', message: 'trainjobs.trainer.kubeflow.org "x" not found' })),
      ),
      'Error from server (NotFound): trainjobs.trainer.kubeflow.org "x" not found',
    );
    assert.equal(kubectlMessage(statusOf(500, status({ message: 'boom' }))), 'Error from server: boom');
    assert.equal(kubectlMessage(statusOf(502, 'Bad Gateway')), 'Error from server: Bad Gateway');
  });
  it('the blanket rule of an unpatched CRD: how to apply the patch', () => {
    const s = statusOf(
      422,
      status({
        reason: 'Invalid',
        details: {
          kind: 'TrainJob',
          name: 'l',
          causes: [{ field: 'spec.trainer', message: 'Invalid value: "object": field is immutable' }],
        },
      }),
    );
    assert.match(adviceFor(s), /--patch-file manifests\/crd-patch\/trainjob-crd-patch\.yaml/);
  });
  it('503: try again; a webhook 403 carries its own way out; an RBAC 403 asks for the right', () => {
    assert.match(
      adviceFor(statusOf(503, status({ reason: 'ServiceUnavailable', message: 'no reconciler leads' }))),
      /again in a few seconds/,
    );
    assert.equal(
      adviceFor(
        statusOf(403, status({ reason: 'Forbidden', message: 'admission webhook "v" denied the request: ...' })),
      ),
      '',
    );
    assert.match(
      adviceFor(
        statusOf(
          403,
          status({ reason: 'Forbidden', message: 'user cannot update', details: { kind: 'trainjobs', name: 'x' } }),
        ),
      ),
      /lacks this right/,
    );
  });
});
