// `trainjob-webhook rules`: the table as text a person reads.
import { RULES, NAMED_TRAINER_FIELDS, type RuleRow } from './table.ts';

export function renderTable(rows: readonly RuleRow[] = RULES): string {
  const lines: string[] = [
    'TrainJob update rules (one table: the webhook evaluates it, `--format crd-patch` and `--format vap` generate the other enforcers)',
    '',
    `Inside spec.trainer nothing may change except numNodes; the table names ${NAMED_TRAINER_FIELDS.join(', ')},`,
    'and every other spec.trainer field is immutable too. Adding, changing and removing all count as changes.',
    '',
  ];
  for (const row of rows) {
    lines.push(`${row.id}`);
    lines.push(`  field:   ${row.field}`);
    lines.push(`  allowed: ${row.allowed}`);
    lines.push(`  denial:  ${row.reason} "${row.message}"`);
    lines.push(`  scope:   ${row.scope || '(the object: status is visible there)'}`);
    lines.push(`  cel:     ${row.rule}`);
    lines.push('');
  }
  lines.push('Nothing else refuses a numNodes change. With cluster access, an admitted one also reads the Jobs of the');
  lines.push("TrainJob's JobSet and warns about its pods that still run or terminate (Job status.active and");
  lines.push(
    'status.terminating): the rebuild waits for them. A read that fails or times out admits the change with a warning.',
  );
  return lines.join('\n');
}
