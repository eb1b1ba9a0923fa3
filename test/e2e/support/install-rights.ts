// What an installed ServiceAccount may do and what it did: the RBAC rules the rendered manifests
// bind to it, the same rights as `kubectl auth can-i --list` reports them, and the requests the
// API server's audit log (level Metadata) recorded for it, each with the authorizer's decision.
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { ControlPlane } from '../../harness/index.ts';
import type { Obj } from './install.ts';

/**
 * One verb on one resource (`resource` or `resource/subresource`) of one API group, in a namespace
 * or cluster-wide ('*'), on some names or all ([]).
 */
export interface Right {
  group: string;
  resource: string;
  verb: string;
  names: string[];
  namespace: string;
}

export interface AuditedRequest {
  verb: string;
  group: string;
  resource: string;
  namespace: string;
  name: string;
  uri: string;
  decision: string;
  code?: number;
  at: number;
}

export const showRight = (r: Right) =>
  `${r.verb} ${r.resource}${r.group ? `.${r.group}` : ''}${r.names.length ? `[${r.names.join(',')}]` : ''}${r.namespace === '*' ? '' : ` in ${r.namespace}`}`;
export const showRequest = (q: AuditedRequest) =>
  `${q.verb} ${q.resource}${q.group ? `.${q.group}` : ''}${q.name ? `/${q.name}` : ''}${q.namespace ? ` in ${q.namespace}` : ''} (${q.decision}, ${q.code ?? '-'})`;

const rightsOfRules = (rules: Obj[], namespace: string): Right[] =>
  rules.flatMap((rule) =>
    (rule.apiGroups ?? []).flatMap((group: string) =>
      (rule.resources ?? []).flatMap((resource: string) =>
        (rule.verbs ?? []).map((verb: string) => ({
          group,
          resource,
          verb,
          names: [...(rule.resourceNames ?? [])].sort(),
          namespace,
        })),
      ),
    ),
  );

/**
 * The rights the rendered manifests bind to the ServiceAccount (ClusterRoleBindings cluster-wide,
 * RoleBindings in their namespace).
 */
export function grantedRights(docs: Obj[], namespace: string, serviceAccount: string): Right[] {
  const bound = (b: Obj) =>
    (b.subjects ?? []).some(
      (s: Obj) => s.kind === 'ServiceAccount' && s.name === serviceAccount && s.namespace === namespace,
    );
  const role = (kind: string, name: string, ns?: string) =>
    docs.find((d) => d.kind === kind && d.metadata.name === name && (ns === undefined || d.metadata.namespace === ns));
  const out: Right[] = [];
  for (const b of docs.filter((d) => (d.kind === 'ClusterRoleBinding' || d.kind === 'RoleBinding') && bound(d))) {
    const scope = b.kind === 'ClusterRoleBinding' ? '*' : b.metadata.namespace;
    const r =
      b.roleRef.kind === 'ClusterRole'
        ? role('ClusterRole', b.roleRef.name)
        : role('Role', b.roleRef.name, b.metadata.namespace);
    if (!r)
      throw new Error(
        `${b.kind}/${b.metadata.name} refers to ${b.roleRef.kind}/${b.roleRef.name}, which the manifests do not have`,
      );
    out.push(...rightsOfRules(r.rules ?? [], scope));
  }
  return out;
}

/** Does the right allow the request (as RBAC decides: group, resource, verb, name if named, namespace if a Role's)? */
export const allows = (r: Right, q: AuditedRequest) =>
  r.group === q.group &&
  r.resource === q.resource &&
  r.verb === q.verb &&
  (r.names.length === 0 || r.names.includes(q.name)) &&
  (r.namespace === '*' || r.namespace === q.namespace);

/** Rights every authenticated user has (system:basic-user, system:discovery, system:public-info-viewer). */
const EVERYONE = new Set([
  'create selfsubjectaccessreviews.authorization.k8s.io',
  'create selfsubjectrulesreviews.authorization.k8s.io',
  'create selfsubjectreviews.authentication.k8s.io',
]);

/**
 * `kubectl auth can-i --list` as the ServiceAccount in its namespace (cluster-wide rules and that
 * namespace's Roles), parsed to rights, without those every authenticated user has; the
 * non-resource URLs listed apart. Rights read back have no namespace of their own: `namespace`.
 */
export async function canIList(
  cp: ControlPlane,
  namespace: string,
  serviceAccount: string,
): Promise<{ rights: string[]; nonResource: string[] }> {
  return parseCanIList(
    (
      await cp.kubectl([
        'auth',
        'can-i',
        '--list',
        '--no-headers',
        '-n',
        namespace,
        '--as',
        `system:serviceaccount:${namespace}:${serviceAccount}`,
      ])
    ).stdout,
  );
}

/**
 * `kubectl auth can-i --list --no-headers` output as rights (`verb resource[.group][/sub][names]`),
 * without everyone's. Pure.
 */
export function parseCanIList(out: string): { rights: string[]; nonResource: string[] } {
  const rights: string[] = [];
  const nonResource: string[] = [];
  for (const line of out.split('\n').filter((l) => l.trim())) {
    // Resources, Non-Resource URLs, Resource Names, Verbs: the last three are bracketed lists.
    const m = /^(\S*)\s+\[([^\]]*)\]\s+\[([^\]]*)\]\s+\[([^\]]*)\]\s*$/.exec(line);
    if (!m) throw new Error(`kubectl auth can-i --list: a line not understood: ${line}`);
    const [, resource, urls, names, verbs] = m;
    const list = (s: string) => s.split(' ').filter(Boolean).sort();
    if (!resource) {
      nonResource.push(`${list(verbs).join(',')} ${list(urls).join(',')}`);
      continue;
    }
    for (const verb of list(verbs)) {
      const shown = `${verb} ${resource}${list(names).length ? `[${list(names).join(',')}]` : ''}`;
      if (!EVERYONE.has(shown)) rights.push(shown);
    }
  }
  return { rights: [...new Set(rights)].sort(), nonResource };
}

/** A right as can-i --list shows it: `verb resource[/sub].group[names]`, no namespace. */
export const showAsCanI = (r: Right) => {
  const [resource, sub] = r.resource.split('/');
  return `${r.verb} ${resource}${r.group ? `.${r.group}` : ''}${sub ? `/${sub}` : ''}${r.names.length ? `[${r.names.join(',')}]` : ''}`;
};

/** An audit policy recording, at level Metadata, every request of the namespace's ServiceAccounts, and nothing else. */
export async function auditFlags(dir: string, namespace: string): Promise<{ args: string[]; logFile: string }> {
  const policy = path.join(dir, 'audit-policy.yaml');
  const logFile = path.join(dir, 'audit.log');
  await writeFile(
    policy,
    [
      'apiVersion: audit.k8s.io/v1',
      'kind: Policy',
      'omitStages: [RequestReceived]',
      'rules:',
      '  - level: Metadata',
      `    userGroups: ["system:serviceaccounts:${namespace}"]`,
      '  - level: None',
      '',
    ].join('\n'),
  );
  return { args: [`--audit-policy-file=${policy}`, `--audit-log-path=${logFile}`, '--audit-log-maxbackup=1'], logFile };
}

/** The requests of one user the audit log recorded from `since` on, one per request (a watch logs two stages). */
// eslint-disable-next-line complexity -- maps an audit event field by field: each ?. and ?? is a default
export function auditedRequests(
  logFile: string,
  username: string,
  since: number,
  until = Number.POSITIVE_INFINITY,
): AuditedRequest[] {
  const seen = new Map<string, AuditedRequest>();
  for (const line of readFileSync(logFile, 'utf8').split('\n')) {
    if (!line.startsWith('{')) continue;
    const e = JSON.parse(line) as Obj;
    if (e.user?.username !== username) continue;
    const at = Date.parse(e.requestReceivedTimestamp);
    if (at < since || at > until) continue;
    const ref = e.objectRef ?? {};
    seen.set(e.auditID, {
      verb: e.verb,
      group: ref.apiGroup ?? '',
      resource: ref.resource ? (ref.subresource ? `${ref.resource}/${ref.subresource}` : ref.resource) : '',
      namespace: ref.namespace ?? '',
      name: ref.name ?? '',
      uri: e.requestURI,
      decision: e.annotations?.['authorization.k8s.io/decision'] ?? '',
      code: e.responseStatus?.code ?? seen.get(e.auditID)?.code,
      at,
    });
  }
  return [...seen.values()];
}
