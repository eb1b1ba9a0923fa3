// Rules this project writes into the TrainJob CRD start with this CEL comment, so the webhook can
// recognise them and not report a violation twice (the table already checks it).
import { GENERATED_RULE_MARKER } from '../api/names.ts';

export { GENERATED_RULE_MARKER };

export function markRule(id: string, rule: string): string {
  return `${GENERATED_RULE_MARKER} ${id}\n${rule}`;
}

export function isGeneratedRule(rule: string): boolean {
  return rule.trimStart().startsWith(GENERATED_RULE_MARKER);
}
