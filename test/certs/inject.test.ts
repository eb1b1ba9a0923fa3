// The caBundle a webhook configuration gets, table-driven.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { withCaBundle } from '../../src/certs/inject.ts';

const PEM = '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n';
const B64 = Buffer.from(PEM).toString('base64');

describe('withCaBundle', () => {
  it('sets the bundle on every webhook, Service or URL, keeping the rest', () => {
    const config = {
      metadata: { name: 'x', resourceVersion: '7' },
      webhooks: [
        { name: 'a', clientConfig: { service: { name: 's', namespace: 'n' } }, sideEffects: 'None' },
        { name: 'b', clientConfig: { url: 'https://127.0.0.1:1/p', caBundle: 'b2xk' } },
        { name: 'c' },
      ],
    };
    const out = withCaBundle(config, PEM)!;
    assert.deepEqual(out, {
      metadata: { name: 'x', resourceVersion: '7' },
      webhooks: [
        { name: 'a', clientConfig: { service: { name: 's', namespace: 'n' }, caBundle: B64 }, sideEffects: 'None' },
        { name: 'b', clientConfig: { url: 'https://127.0.0.1:1/p', caBundle: B64 } },
        { name: 'c', clientConfig: { caBundle: B64 } },
      ],
    });
    assert.equal(config.webhooks[1].clientConfig!.caBundle, 'b2xk', 'the input is not modified');
  });

  const unchanged: [string, unknown][] = [
    ['every webhook already has it', { webhooks: [{ clientConfig: { caBundle: B64 } }] }],
    ['no webhooks list', { metadata: {} }],
    ['an empty webhooks list', { webhooks: [] }],
    ['webhooks that are not objects', { webhooks: ['x', null] }],
    ['not an object', 'nope'],
    ['null', null],
  ];
  for (const [name, config] of unchanged) {
    it(`nothing to write when ${name}`, () => assert.equal(withCaBundle(config, PEM), undefined));
  }
});
