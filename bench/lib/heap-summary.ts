// What a V8 heap snapshot (.heapsnapshot, as --heapsnapshot-signal writes it) holds, summed: the
// self size of its nodes by type, the largest constructors, and the functions' size (their
// SharedFunctionInfo, bytecode and source) by where they came from: node's own modules, each npm
// package, the project's files. Self sizes only (no retained sizes): what each holder is, not
// who keeps it.
import { readFileSync } from 'node:fs';

export interface HeapSummary {
  total: number;
  byType: Record<string, number>;
  /** The largest object and closure constructors by self size. */
  constructors: { name: string; count: number; size: number }[];
  /** Function metadata, bytecode and script source by origin (`node:`, a package, `project`). */
  byOrigin: Record<string, number>;
  /** The URLs of the scripts the heap holds: every module loaded (and not collected). */
  scripts: string[];
}

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]] } };
  nodes: number[];
  edges: number[];
  strings: string[];
}

/** `node:fs` → node, `file:///…/node_modules/@s/a/x.js` → @s/a, another file → project. */
export function originOf(url: string): string {
  if (url.startsWith('node:') || !url.includes('/')) return 'node';
  const at = url.lastIndexOf('/node_modules/');
  if (at < 0) return 'project';
  const rest = url.slice(at + '/node_modules/'.length).split('/');
  return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
}

// The edges by which a function's own code hangs off its SharedFunctionInfo (names vary by V8 version).
const CODE_EDGES = new Set([
  'function_data',
  'bytecode',
  'trusted_function_data',
  'name_or_scope_info',
  'raw_outer_scope_info_or_feedback_metadata',
]);
const SCRIPT_EDGES = new Set(['script', 'script_or_debug_info']);

// eslint-disable-next-line complexity -- one pass over V8's flat arrays
export function summarizeHeap(file: string, top = 15): HeapSummary {
  const s = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
  const nf = s.snapshot.meta.node_fields;
  const ef = s.snapshot.meta.edge_fields;
  const N = nf.length;
  const E = ef.length;
  const [TYPE, NAME, SIZE, EDGES] = ['type', 'name', 'self_size', 'edge_count'].map((f) => nf.indexOf(f));
  const [ETYPE, ENAME, ETO] = ['type', 'name_or_index', 'to_node'].map((f) => ef.indexOf(f));
  const nodeTypes = s.snapshot.meta.node_types[0];
  const edgeTypes = s.snapshot.meta.edge_types[0];
  const byType: Record<string, number> = {};
  const ctors = new Map<string, { count: number; size: number }>();
  const byOrigin: Record<string, number> = {};
  let total = 0;
  // Scripts first: each Script node's URL (its `name` edge) and source size (its `source` edge).
  const scriptUrl = new Map<number, string>();
  const firstEdge: number[] = [];
  for (let i = 0, e = 0; i < s.nodes.length; i += N) {
    firstEdge.push(e);
    e += s.nodes[i + EDGES] * E;
  }
  const edgesOf = function* (node: number) {
    const from = firstEdge[node / N];
    for (let e = from; e < from + s.nodes[node + EDGES] * E; e += E)
      yield {
        type: edgeTypes[s.edges[e + ETYPE]],
        name: s.strings[s.edges[e + ENAME]] ?? '',
        to: s.edges[e + ETO],
      };
  };
  // A Script: a code node with a `source` edge, named by its URL.
  for (let i = 0; i < s.nodes.length; i += N) {
    if (nodeTypes[s.nodes[i + TYPE]] !== 'code') continue;
    let source = -1;
    for (const edge of edgesOf(i))
      if (edge.type === 'internal' && edge.name === 'source') source = s.nodes[edge.to + SIZE];
    if (source < 0) continue;
    const url = s.strings[s.nodes[i + NAME]];
    scriptUrl.set(i, url);
    const o = originOf(url);
    byOrigin[o] = (byOrigin[o] ?? 0) + source + s.nodes[i + SIZE];
  }
  for (let i = 0; i < s.nodes.length; i += N) {
    const type = nodeTypes[s.nodes[i + TYPE]];
    const size = s.nodes[i + SIZE];
    total += size;
    byType[type] = (byType[type] ?? 0) + size;
    if (type === 'object' || type === 'closure') {
      const name = `${s.strings[s.nodes[i + NAME]]}${type === 'closure' ? ' (closure)' : ''}`;
      const c = ctors.get(name) ?? { count: 0, size: 0 };
      c.count++;
      c.size += size;
      ctors.set(name, c);
    }
    // A SharedFunctionInfo: a node with a `script` edge; its own size and its code's.
    let script: number | undefined;
    let code = 0;
    for (const edge of edgesOf(i)) {
      if (SCRIPT_EDGES.has(edge.name) && scriptUrl.has(edge.to)) script = edge.to;
      else if (CODE_EDGES.has(edge.name)) code += s.nodes[edge.to + SIZE];
    }
    if (script !== undefined) {
      const o = originOf(scriptUrl.get(script)!);
      byOrigin[o] = (byOrigin[o] ?? 0) + size + code;
    }
  }
  const constructors = [...ctors]
    .map(([name, c]) => ({ name, ...c }))
    .sort((a, b) => b.size - a.size)
    .slice(0, top);
  return { total, byType, constructors, byOrigin, scripts: [...scriptUrl.values()] };
}
