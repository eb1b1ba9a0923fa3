// Counts the API requests the reconciler makes, by verb and resource, the way the API server's
// `apiserver_request_total` names them (get, list, watch, create, patch, delete...): every client
// it makes (typed APIs, watches, the Lease) authenticates each request through its KubeConfig's
// `applySecurityAuthentication`, so a KubeConfig that counts there sees them all.
import type { KubeConfig } from '@kubernetes/client-node';

export interface ApiRequest {
  verb: string;
  resource: string;
}

/**
 * The verb and resource of a request (`GET /apis/batch/v1/namespaces/ns/jobs?labelSelector=x` is a
 * list of jobs; a subresource counts as `resource/subresource`). Pure; never throws.
 */
// eslint-disable-next-line complexity -- one case per verb and URL shape, as the apiserver's RequestInfoFactory
export function describeRequest(method: string, url: string): ApiRequest {
  let path: string;
  let query: URLSearchParams;
  try {
    const u = new URL(url, 'http://x');
    path = u.pathname;
    query = u.searchParams;
  } catch {
    return { verb: method.toLowerCase(), resource: 'unknown' };
  }
  const parts = path.split('/').filter(Boolean);
  // /api/v1/... or /apis/group/version/...
  const rest = parts[0] === 'api' ? parts.slice(2) : parts[0] === 'apis' ? parts.slice(3) : [];
  const scoped = rest[0] === 'namespaces' && rest.length >= 3 ? rest.slice(2) : rest;
  const [resource, name, subresource] = scoped;
  const kind = resource ? (subresource ? `${resource}/${subresource}` : resource) : 'unknown';
  const m = method.toUpperCase();
  let verb = m.toLowerCase();
  if (m === 'GET')
    verb = query.get('watch') === 'true' || query.get('watch') === '1' ? 'watch' : name || !resource ? 'get' : 'list';
  else if (m === 'POST') verb = 'create';
  else if (m === 'PUT') verb = 'update';
  else if (m === 'DELETE' && !name) verb = 'deletecollection';
  return { verb, resource: kind };
}

/**
 * The same KubeConfig (it reads everything through its prototype) that calls `onRequest` for every
 * request authenticated through it.
 */
export function countingKubeConfig(kc: KubeConfig, onRequest: (request: ApiRequest) => void): KubeConfig {
  const counting = Object.create(kc) as KubeConfig;
  counting.applySecurityAuthentication = async (context) => {
    try {
      onRequest(describeRequest(String(context.getHttpMethod()), context.getUrl()));
    } catch {
      // counting never fails a request
    }
    return kc.applySecurityAuthentication(context);
  };
  return counting;
}
