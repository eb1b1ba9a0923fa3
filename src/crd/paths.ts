// Kubernetes field.Path strings: `spec.trainer.env[0].name`, map keys as `metadata.labels[key]`.
// (kube-openapi's schema messages use their own dotted form; see validate.ts.)

/** One step of a field path: a field or map key (string) or a list index (number). */
export type PathSegment = string | number;

export function childPath(parent: string, name: string): string {
  return parent ? `${parent}.${name}` : name;
}

export function indexPath(parent: string, index: number): string {
  return `${parent}[${index}]`;
}

export function keyPath(parent: string, key: string): string {
  return `${parent}[${key}]`;
}

/**
 * Splits a field path into segments: `spec.env[0].name` → ['spec', 'env', 0, 'name'] and
 * `metadata.labels[app.kubernetes.io/name]` → ['metadata', 'labels', 'app.kubernetes.io/name'].
 * A bracketed all-digit segment becomes an index; whether it is one is decided against the data.
 */
export function parseFieldPath(path: string): PathSegment[] {
  const out: PathSegment[] = [];
  let i = 0;
  let name = '';
  const flush = (): void => {
    if (name !== '') out.push(name);
    name = '';
  };
  while (i < path.length) {
    const ch = path[i];
    if (ch === '.') {
      flush();
      i++;
    } else if (ch === '[') {
      flush();
      const end = path.indexOf(']', i + 1);
      const inner = end < 0 ? path.slice(i + 1) : path.slice(i + 1, end);
      out.push(/^\d+$/.test(inner) ? Number(inner) : inner);
      i = end < 0 ? path.length : end + 1;
    } else {
      name += ch;
      i++;
    }
  }
  flush();
  return out;
}
