// `trainjob-webhook rules`: the table as text a person reads.
import { RULES, NAMED_TRAINER_FIELDS } from './table.ts';

export function renderTable(): string {
  const lines: string[] = [
    'TrainJob update rules (one table: the webhook evaluates it, `--format crd-patch` and `--format vap` generate the other enforcers)',
    '',
    `Inside spec.trainer nothing may change except numNodes; the table names ${NAMED_TRAINER_FIELDS.join(', ')},`,
    'and every other spec.trainer field is immutable too. Adding, changing and removing all count as changes.',
    '',
  ];
  for (const row of RULES) {
    lines.push(`${row.id}`);
    lines.push(`  field:   ${row.field}`);
    lines.push(`  allowed: ${row.allowed}`);
    lines.push(`  denial:  ${row.reason} "${row.message}"`);
    lines.push(`  scope:   ${row.scope}`);
    lines.push(`  cel:     ${row.rule}`);
    lines.push('');
  }
  lines.push('Also refused, with cluster access: a numNodes change while the TrainJob\'s JobSet has active pods');
  lines.push('(status.replicatedJobsStatus[].active > 0); a failed JobSet read refuses the change (fail closed).');
  return lines.join('\n');
}
