// Names the API requests the reconciler makes, by verb and resource, the way the API server's
// `apiserver_request_total` names them (get, list, watch, create, patch, delete...): every call it
// makes (reads, writes, watches, the Lease) goes through one client of the request layer, which
// tells run.ts of each (src/cluster/api-request.ts countingRequests).

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
