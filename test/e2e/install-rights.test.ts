// The pure parts of install-layouts' rights check, table-driven and with no server: which rights
// the manifests bind to an account, whether a right allows an audited request (RBAC's matching:
// group, resource, verb, names, a Role's namespace), the audit log read back one entry per
// request, and `kubectl auth can-i --list` output read as rights. Then, with kustomize: every
// account of every install holds exactly the rights its processes' code uses.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import {
  allows,
  auditedRequests,
  grantedRights,
  parseCanIList,
  showAsCanI,
  type AuditedRequest,
} from './support/install-rights.ts';
import type { Obj } from './support/install.ts';
import { CERT_ROTATION, RECONCILER, RESTORER, tablesOf, WEBHOOK } from './support/rights-table.ts';
import { combinationName, combinations } from '../../hack/chart/combinations.ts';
import {
  certManagerReplacements,
  defaultCellEnv,
  kustomizeCombination,
  manifestsNamespace,
  pinnedKubectl,
} from '../../hack/chart/kustomize.ts';
import { controlPlaneAvailability, projectRoot } from '../harness/index.ts';

const rendering = controlPlaneAvailability(defaultCellEnv());
const renderSkip = rendering.available ? false : rendering.reason;
const NAMESPACE = await manifestsNamespace();

const sa = (name: string, namespace = 'ops') => ({ kind: 'ServiceAccount', name, namespace });
const docs = [
  {
    kind: 'ClusterRole',
    metadata: { name: 'c' },
    rules: [{ apiGroups: ['jobset.x-k8s.io'], resources: ['jobsets', 'jobsets/finalizers'], verbs: ['get', 'update'] }],
  },
  {
    kind: 'Role',
    metadata: { name: 'r', namespace: 'ops' },
    rules: [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], resourceNames: ['lock'], verbs: ['update'] }],
  },
  {
    kind: 'ClusterRoleBinding',
    metadata: { name: 'cb' },
    roleRef: { kind: 'ClusterRole', name: 'c' },
    subjects: [sa('a')],
  },
  {
    kind: 'RoleBinding',
    metadata: { name: 'rb', namespace: 'ops' },
    roleRef: { kind: 'Role', name: 'r' },
    subjects: [sa('a')],
  },
  {
    kind: 'ClusterRoleBinding',
    metadata: { name: 'other' },
    roleRef: { kind: 'ClusterRole', name: 'c' },
    subjects: [sa('a', 'elsewhere')],
  },
];
const request = (q: Partial<AuditedRequest>): AuditedRequest => ({
  verb: 'get',
  group: '',
  resource: '',
  namespace: '',
  name: '',
  uri: '',
  decision: 'allow',
  at: 0,
  ...q,
});

describe('rights bound to an account and the requests they allow', () => {
  const rights = grantedRights(docs, 'ops', 'a');
  it("every verb of every resource of each bound role, cluster-wide or in the RoleBinding's namespace; other accounts' bindings not", () => {
    assert.deepEqual(rights.map(showAsCanI), [
      'get jobsets.jobset.x-k8s.io',
      'update jobsets.jobset.x-k8s.io',
      'get jobsets.jobset.x-k8s.io/finalizers',
      'update jobsets.jobset.x-k8s.io/finalizers',
      'update leases.coordination.k8s.io[lock]',
    ]);
    assert.deepEqual(
      rights.map((r) => r.namespace),
      ['*', '*', '*', '*', 'ops'],
    );
    assert.deepEqual(grantedRights(docs, 'ops', 'b'), []);
  });
  it('a binding to a role the manifests lack is an error', () => {
    assert.throws(
      () =>
        grantedRights(
          [
            {
              kind: 'ClusterRoleBinding',
              metadata: { name: 'x' },
              roleRef: { kind: 'ClusterRole', name: 'gone' },
              subjects: [sa('a')],
            },
          ],
          'ops',
          'a',
        ),
      /ClusterRole\/gone/,
    );
  });
  const cases: [string, Partial<AuditedRequest>, boolean][] = [
    [
      'get a JobSet in any namespace',
      { group: 'jobset.x-k8s.io', resource: 'jobsets', namespace: 'team', name: 'j' },
      true,
    ],
    [
      'delete a JobSet: no such verb',
      { verb: 'delete', group: 'jobset.x-k8s.io', resource: 'jobsets', namespace: 'team', name: 'j' },
      false,
    ],
    [
      'the subresource is its own resource',
      { verb: 'update', group: 'jobset.x-k8s.io', resource: 'jobsets/finalizers', namespace: 'team', name: 'j' },
      true,
    ],
    ['another group', { group: 'batch', resource: 'jobsets', namespace: 'team', name: 'j' }, false],
    [
      "the named Lease in the Role's namespace",
      { verb: 'update', group: 'coordination.k8s.io', resource: 'leases', namespace: 'ops', name: 'lock' },
      true,
    ],
    [
      'another Lease',
      { verb: 'update', group: 'coordination.k8s.io', resource: 'leases', namespace: 'ops', name: 'other' },
      false,
    ],
    [
      'the named Lease in another namespace',
      { verb: 'update', group: 'coordination.k8s.io', resource: 'leases', namespace: 'team', name: 'lock' },
      false,
    ],
  ];
  for (const [what, q, allowed] of cases)
    it(`${what}: ${allowed ? 'allowed' : 'not allowed'}`, () =>
      assert.equal(
        rights.some((r) => allows(r, request(q))),
        allowed,
      ));
});

describe('the audit log read back', () => {
  it("one entry per request (a watch logs ResponseStarted and ResponseComplete), of that user, in the time window, with the authorizer's decision", () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'tjw-audit-'));
    const file = path.join(dir, 'audit.log');
    const event = (id: string, user: string, at: string, stage: string, extra: object = {}) =>
      JSON.stringify({
        kind: 'Event',
        auditID: id,
        stage,
        user: { username: user },
        requestReceivedTimestamp: at,
        verb: 'watch',
        requestURI: '/x',
        objectRef: { resource: 'secrets', namespace: 'ops', name: 'cert', apiVersion: 'v1' },
        annotations: { 'authorization.k8s.io/decision': 'allow' },
        responseStatus: { code: 200 },
        ...extra,
      });
    writeFileSync(
      file,
      [
        event('1', 'me', '2026-01-01T00:00:01Z', 'ResponseStarted'),
        event('1', 'me', '2026-01-01T00:00:01Z', 'ResponseComplete'),
        event('2', 'someone', '2026-01-01T00:00:02Z', 'ResponseComplete'),
        event('3', 'me', '2026-01-01T00:00:03Z', 'ResponseComplete', {
          verb: 'get',
          objectRef: {
            resource: 'leases',
            subresource: 'status',
            apiGroup: 'coordination.k8s.io',
            namespace: 'ops',
            name: 'l',
          },
          annotations: { 'authorization.k8s.io/decision': 'forbid' },
          responseStatus: { code: 403 },
        }),
        event('4', 'me', '2026-01-01T00:00:09Z', 'ResponseComplete'),
        '',
      ].join('\n'),
    );
    const got = auditedRequests(file, 'me', Date.parse('2026-01-01T00:00:00Z'), Date.parse('2026-01-01T00:00:05Z'));
    rmSync(dir, { recursive: true, force: true });
    assert.deepEqual(
      got.map((q) => [q.verb, q.group, q.resource, q.namespace, q.name, q.decision, q.code]),
      [
        ['watch', '', 'secrets', 'ops', 'cert', 'allow', 200],
        ['get', 'coordination.k8s.io', 'leases/status', 'ops', 'l', 'forbid', 403],
      ],
    );
  });
});

describe('kubectl auth can-i --list read as rights', () => {
  it('each verb of each row, names in brackets, subresources as kubectl shows them; what every user may do and non-resource URLs apart', () => {
    const out = [
      'selfsubjectreviews.authentication.k8s.io                      []                  []                              [create]',
      'selfsubjectaccessreviews.authorization.k8s.io                 []                  []                              [create]',
      'jobsets.jobset.x-k8s.io/finalizers                            []                  []                              [update]',
      'leases.coordination.k8s.io                                    []                  [trainjob-webhook-reconciler]   [get update]',
      'events                                                        []                  []                              [create]',
      '                                                              [/api/*]            []                              [get]',
      '',
    ].join('\n');
    assert.deepEqual(parseCanIList(out), {
      rights: [
        'create events',
        'get leases.coordination.k8s.io[trainjob-webhook-reconciler]',
        'update jobsets.jobset.x-k8s.io/finalizers',
        'update leases.coordination.k8s.io[trainjob-webhook-reconciler]',
      ],
      nonResource: ['get /api/*'],
    });
  });
  it('a line in another format is an error, not a right dropped', () => {
    assert.throws(() => parseCanIList('jobsets get'), /not understood/);
  });
});

// Issue 26 item 4: each account of every install the chart and kustomize can render holds exactly
// the rights of the processes that run under it (support/rights-table.ts), each right with the code
// that uses it. With install-layouts.test.ts (can-i --list equals the rendered rights, against the
// API server) a right no code path uses cannot come back unnoticed.
describe('every right of every account is one a code path of its processes uses', { skip: renderSkip }, () => {
  const tables = { WEBHOOK, CERT_ROTATION, RECONCILER, RESTORER };
  it('each table entry names a file that makes the request', () => {
    const missing = Object.entries(tables).flatMap(([table, rights]) =>
      Object.entries(rights)
        .filter(([, [file, text]]) => !readFileSync(path.join(projectRoot, file), 'utf8').includes(text))
        .map(([right, [file, text]]) => `${table}: ${right}: ${file} lacks ${JSON.stringify(text)}`),
    );
    assert.deepEqual(missing, []);
  });

  it('for each combination of the chart (every layout and component kustomize renders), each account holds exactly its processes’ rights', async () => {
    const kubectl = pinnedKubectl();
    const replacements = await certManagerReplacements();
    const granted = new Set<string>();
    for (const c of combinations()) {
      const docs = (await kustomizeCombination(kubectl, c, { certManagerReplacements: replacements })) as Obj[];
      const pods = docs.filter((d) => d.kind === 'Deployment').map((d) => d.spec.template.spec);
      for (const account of new Set(pods.map((p) => p.serviceAccountName as string))) {
        const expected = new Set(
          pods
            .filter((p) => p.serviceAccountName === account)
            .flatMap((p) => p.containers.flatMap((x: { name: string; args?: string[] }) => tablesOf(x)))
            .flatMap((t) => Object.keys(t)),
        );
        const rights = [...new Set(grantedRights(docs, NAMESPACE, account).map(showAsCanI))].sort();
        rights.forEach((r) => granted.add(r));
        assert.deepEqual(rights, [...expected].sort(), `${combinationName(c)}, ${account}`);
      }
    }
    const stale = Object.values(tables).flatMap((t) => Object.keys(t).filter((r) => !granted.has(r)));
    assert.deepEqual(stale, [], 'table entries no combination grants');
  });
});
