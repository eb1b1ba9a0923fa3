// What a failed API call says to its callers (src/cluster/errors.ts): the API server's Status
// message when the body carries one, whichever client made the call (client-node's ApiException
// may carry the body as text or parsed; this project's ApiError as text), else the error's own.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError, describeError, refusalMessage, statusMessage } from '../../src/cluster/errors.ts';

const refused = (body: unknown, message = 'HTTP-Code: 422 Message: Unknown API Status Code!') =>
  Object.assign(new Error(message), { code: 422, body });

describe('statusMessage: the message of a Status body, as text or parsed', () => {
  const cases: Array<[string, unknown, string | undefined]> = [
    ['JSON text with a message', '{"kind":"Status","message":"admission webhook denied"}', 'admission webhook denied'],
    ['JSON text without a message', '{"kind":"Status"}', ''],
    ['JSON text with a message that is not a string', '{"message":7}', ''],
    ['JSON text that is not an object', '"just a string"', ''],
    ['text that is not JSON', '<html>bad gateway</html>', undefined],
    ['a parsed Status', { kind: 'Status', message: 'quota exceeded' }, 'quota exceeded'],
    ['a parsed object without a message', { kind: 'Status' }, ''],
    ['no body', undefined, undefined],
    ['a null body', null, undefined],
  ];
  for (const [name, body, want] of cases) it(name, () => assert.equal(statusMessage(body), want));
});

describe('refusalMessage: the whole reason on one line', () => {
  it('the Status message of a text body, its whitespace folded', () => {
    assert.equal(refusalMessage(refused('{"message":"a: [x,\\n  y]"}')), 'a: [x, y]');
  });
  it('the Status message of a parsed body', () => {
    assert.equal(refusalMessage(refused({ message: 'denied' })), 'denied');
  });
  it("the error's own message when the body is not a Status, or its message is empty", () => {
    assert.equal(refusalMessage(refused('<html/>')), 'HTTP-Code: 422 Message: Unknown API Status Code!');
    assert.equal(refusalMessage(refused({ message: '' })), 'HTTP-Code: 422 Message: Unknown API Status Code!');
    assert.equal(refusalMessage(refused(undefined, 'socket hang up')), 'socket hang up');
  });
  it('at most 1500 characters', () => {
    assert.equal(refusalMessage(refused({ message: 'x'.repeat(5000) })).length, 1500);
  });
});

describe('describeError: HTTP status and reason, one line', () => {
  it('an ApiError with a Status body', () => {
    assert.equal(
      describeError(new ApiError(403, '{"message":"jobs.batch is forbidden"}', 'GET jobs')),
      'HTTP 403: jobs.batch is forbidden',
    );
  });
  it("client-node's parsed body", () => {
    assert.equal(describeError(refused({ message: 'denied\nsecond line' })), 'HTTP 422: denied');
  });
  it('a body that is not a Status: the error message', () => {
    assert.equal(describeError(new ApiError(502, '<html/>', 'GET jobs')), 'HTTP 502: GET jobs: HTTP 502');
  });
});
