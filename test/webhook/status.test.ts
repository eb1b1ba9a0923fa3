import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fieldError } from '../../src/field/errors.ts';
import type { FieldError } from '../../src/field/errors.ts';
import { aggregate, denialStatus, thrownErrorStatus } from '../../src/webhook/status.ts';

const image = fieldError.invalid('spec.trainer.image', 'x:2', 'field is immutable');
const numNodes = fieldError.forbidden(
  'spec.trainer.numNodes',
  'may only change while the TrainJob is suspended; suspend it first',
);
const managedBy = fieldError.forbidden('spec.managedBy', 'field is immutable');
const jobsetRead = fieldError.internal('spec.trainer.numNodes', 'reading JobSet team-a/my-job: connection refused');
const required = fieldError.required('spec.runtimeRef.name');

describe('denialStatus: code and reason', () => {
  const table: { name: string; causes: FieldError[]; code: number; reason: string }[] = [
    { name: 'one Invalid', causes: [image], code: 422, reason: 'Invalid' },
    { name: 'one Required', causes: [required], code: 422, reason: 'Invalid' },
    { name: 'every cause Forbidden', causes: [numNodes, managedBy], code: 403, reason: 'Forbidden' },
    { name: 'Forbidden and Invalid', causes: [numNodes, image], code: 422, reason: 'Invalid' },
    { name: 'only InternalError (JobSet read failed)', causes: [jobsetRead], code: 500, reason: 'InternalError' },
    { name: 'InternalError and Invalid', causes: [jobsetRead, image], code: 422, reason: 'Invalid' },
    { name: 'InternalError and Forbidden', causes: [jobsetRead, numNodes], code: 422, reason: 'Invalid' },
  ];
  for (const row of table) {
    it(`${row.name} -> ${row.code} ${row.reason}`, () => {
      const s = denialStatus('my-job', row.causes);
      assert.equal(s.code, row.code);
      assert.equal(s.reason, row.reason);
      assert.equal(s.status, 'Failure');
      assert.equal(s.details?.causes?.length, row.causes.length, 'every violated rule is a cause');
    });
  }
});

describe('denialStatus: messages and details like apierrors', () => {
  it('NewInvalid with one cause', () => {
    assert.deepEqual(denialStatus('my-job', [image]), {
      metadata: {},
      status: 'Failure',
      message:
        'TrainJob.trainer.kubeflow.org "my-job" is invalid: spec.trainer.image: Invalid value: "x:2": field is immutable',
      reason: 'Invalid',
      code: 422,
      details: {
        name: 'my-job',
        group: 'trainer.kubeflow.org',
        kind: 'TrainJob',
        causes: [
          {
            reason: 'FieldValueInvalid',
            message: 'Invalid value: "x:2": field is immutable',
            field: 'spec.trainer.image',
          },
        ],
      },
    });
  });

  it('NewInvalid with several causes: bracketed, comma-space separated, in order', () => {
    const s = denialStatus('my-job', [image, required]);
    assert.equal(
      s.message,
      'TrainJob.trainer.kubeflow.org "my-job" is invalid: [spec.trainer.image: Invalid value: "x:2": field is immutable, spec.runtimeRef.name: Required value]',
    );
    assert.deepEqual(s.details?.causes?.[1], {
      reason: 'FieldValueRequired',
      message: 'Required value',
      field: 'spec.runtimeRef.name',
    });
  });

  it('duplicate messages appear once in the message (ToAggregate) but every cause is kept', () => {
    const s = denialStatus('my-job', [image, image]);
    assert.equal(
      s.message,
      'TrainJob.trainer.kubeflow.org "my-job" is invalid: spec.trainer.image: Invalid value: "x:2": field is immutable',
    );
    assert.equal(s.details?.causes?.length, 2);
  });

  it('NewForbidden names the resource, not the kind', () => {
    const s = denialStatus('my-job', [numNodes]);
    assert.equal(
      s.message,
      'trainjobs.trainer.kubeflow.org "my-job" is forbidden: spec.trainer.numNodes: Forbidden: may only change while the TrainJob is suspended; suspend it first',
    );
    assert.deepEqual(s.details, {
      name: 'my-job',
      group: 'trainer.kubeflow.org',
      kind: 'trainjobs',
      causes: [
        {
          reason: 'FieldValueForbidden',
          message: 'Forbidden: may only change while the TrainJob is suspended; suspend it first',
          field: 'spec.trainer.numNodes',
        },
      ],
    });
  });

  it("the name is quoted with Go's %q, as the API server's NewInvalid and NewForbidden quote it (a hand-made review may name anything)", () => {
    const odd = 'Bad\u00e9\u0007name\t\u0000';
    assert.match(
      denialStatus(odd, [image]).message,
      /^TrainJob\.trainer\.kubeflow\.org "Badé\\aname\\t\\x00" is invalid: /,
    );
    assert.match(
      denialStatus(odd, [numNodes]).message,
      /^trainjobs\.trainer\.kubeflow\.org "Badé\\aname\\t\\x00" is forbidden: /,
    );
  });

  it('NewForbidden without a name', () => {
    assert.match(
      denialStatus('', [managedBy]).message,
      /^trainjobs\.trainer\.kubeflow\.org is forbidden: spec\.managedBy: Forbidden: field is immutable$/,
    );
  });

  it('NewInternalError', () => {
    const s = denialStatus('my-job', [jobsetRead]);
    assert.equal(
      s.message,
      'Internal error occurred: spec.trainer.numNodes: Internal error: reading JobSet team-a/my-job: connection refused',
    );
    assert.deepEqual(s.details, {
      causes: [
        {
          reason: 'InternalError',
          message: 'Internal error: reading JobSet team-a/my-job: connection refused',
          field: 'spec.trainer.numNodes',
        },
      ],
    });
  });

  it('a cause without a field has no field key', () => {
    const s = denialStatus('my-job', [fieldError.invalid('', 'x', 'bad object')]);
    assert.deepEqual(s.details?.causes, [{ reason: 'FieldValueInvalid', message: 'Invalid value: "x": bad object' }]);
    assert.equal(s.message, 'TrainJob.trainer.kubeflow.org "my-job" is invalid: Invalid value: "x": bad object');
  });

  it('a thrown error becomes NewInternalError with its message, no stack', () => {
    const s = thrownErrorStatus(new TypeError("Cannot read properties of undefined (reading 'spec')"));
    assert.equal(s.code, 500);
    assert.equal(s.reason, 'InternalError');
    assert.equal(s.message, "Internal error occurred: Cannot read properties of undefined (reading 'spec')");
    assert.deepEqual(s.details, { causes: [{ message: "Cannot read properties of undefined (reading 'spec')" }] });
    assert.doesNotMatch(JSON.stringify(s), /at .*\.ts:\d+/);
  });
});

describe('aggregate (utilerrors.NewAggregate formatting)', () => {
  it('formats like Go', () => {
    assert.equal(aggregate([]), undefined);
    assert.equal(aggregate(['a']), 'a');
    assert.equal(aggregate(['a', 'b', 'a']), '[a, b]');
    assert.equal(aggregate(['a', 'a']), 'a');
  });
});
