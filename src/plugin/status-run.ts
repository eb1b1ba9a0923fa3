// `kubectl trainjob status [NAME]`, the I/O edge: reads the job (or every job of the namespace)
// with the user's credentials and prints status-view.ts's view.
import type { Runtime } from '../api/objects.ts';
import type { StatusArgs } from './args.ts';
import { ApiRefusal, type Cluster } from './cluster.ts';
import { refusalLines } from './kubectl-error.ts';
import { renderBlock, renderTable, statusView } from './status-view.ts';

export async function runStatus(
  c: Cluster,
  args: StatusArgs,
  io: { out(t: string): void; err(t: string): void },
  program: string,
): Promise<number> {
  try {
    const runtimes = new Map<string, Runtime | undefined>();
    const jobs = args.name ? [await c.getTrainJob(args.name)] : await c.listTrainJobs();
    const views = [];
    for (const tj of jobs) views.push(statusView(await c.observe(tj, runtimes), program));
    if (args.output !== 'text') {
      const value = args.name ? views[0] : { items: views };
      io.out(args.output === 'json' ? JSON.stringify(value, null, 2) : (await import('yaml')).stringify(value));
    } else if (args.name) io.out(renderBlock(views[0], program));
    else if (views.length === 0) io.err(`No resources found in ${c.namespace} namespace.`);
    else io.out(renderTable(views));
    return 0;
  } catch (err) {
    if (!(err instanceof ApiRefusal)) throw err;
    for (const line of refusalLines(err.status)) io.err(line);
    return 1;
  }
}
