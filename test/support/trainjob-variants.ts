// Random TrainJobs for property tests: each named field (a dotted path) takes one of a few given
// values (undefined removes it), chosen by fast-check, over the example TrainJob.
import fc from 'fast-check';
import { trainJob } from '../rules/fixtures.ts';

export type FieldChoices = Record<string, readonly unknown[]>;

/** A builder of TrainJobs from a choice per field, and the arbitrary of those choices. */
export function trainJobVariants(fields: FieldChoices, maxChoice: number) {
  const build = (choice: Record<string, number>): Record<string, any> => {
    const o: Record<string, any> = structuredClone(trainJob());
    for (const [path, values] of Object.entries(fields)) {
      const v = structuredClone(values[choice[path] % values.length]);
      const steps = path.split('.');
      let parent = o;
      for (const s of steps.slice(0, -1)) parent = parent[s] ??= {};
      if (v === undefined) delete parent[steps.at(-1)!];
      else parent[steps.at(-1)!] = v;
    }
    return o;
  };
  const choiceArb = fc.record(
    Object.fromEntries(Object.keys(fields).map((k) => [k, fc.nat(maxChoice)])) as Record<string, fc.Arbitrary<number>>,
  );
  return { build, choiceArb };
}
