// Summarises a V8 .cpuprofile (from `node --cpu-prof`): self time by function and by file, and
// inclusive (total) time by function, so bench/PROFILE.md can say where the time goes.
//   node bench/profile-summary.ts FILE.cpuprofile [top=25]
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
}

const [file, topArg] = process.argv.slice(2);
if (!file) throw new Error('usage: node bench/profile-summary.ts FILE.cpuprofile [top]');
const top = Number(topArg ?? 25);
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

const selfUs = new Map<number, number>();
profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
const totalUs = [...selfUs.values()].reduce((a, b) => a + b, 0);

const short = (url: string) =>
  url.replace(/^file:\/\/.*?\/(node_modules|src|bench)\//, '$1/').replace(/^node:/, 'node:');
const label = (n: Node) =>
  `${n.callFrame.functionName || '(anonymous)'} ${short(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;

const selfByFn = new Map<string, number>();
const selfByFile = new Map<string, number>();
const inclusiveByFn = new Map<string, number>();
for (const [id, us] of selfUs) {
  const n = byId.get(id)!;
  selfByFn.set(label(n), (selfByFn.get(label(n)) ?? 0) + us);
  const f =
    short(n.callFrame.url).replace(/^(node_modules\/(@[^/]+\/)?[^/]+).*/, '$1') || `(${n.callFrame.functionName})`;
  selfByFile.set(f, (selfByFile.get(f) ?? 0) + us);
  // Inclusive: each distinct function on the sample's stack counts once.
  const seen = new Set<string>();
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const l = label(byId.get(cur)!);
    if (seen.has(l)) continue;
    seen.add(l);
    inclusiveByFn.set(l, (inclusiveByFn.get(l) ?? 0) + us);
  }
}

const print = (title: string, m: Map<string, number>) => {
  console.log(`\n${title}`);
  for (const [k, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top))
    console.log(`${((100 * us) / totalUs).toFixed(1).padStart(5)}%  ${k}`);
};
console.log(`${file}: ${(totalUs / 1e6).toFixed(2)} s sampled`);
print('self time by file', selfByFile);
print('self time by function', selfByFn);
print('total time by function', inclusiveByFn);
