// Text from the cluster made safe to print on a terminal: a reason or message anyone who may write
// the object can set would otherwise reach the user's terminal as escape sequences (retitle the
// window, clear the screen, fake earlier lines). Every C0 and C1 control and DEL but the newline is
// written out visibly (ESC as `^[` and CR as `\r`, as kubectl does; the others in caret notation or
// as `\u0085`), and each string is cut at MAX_PRINTED characters. For text output only: JSON and
// YAML output keep the values as they are (the encoders escape them). Pure.

/** The longest cluster string printed as it is; a longer one ends in an ellipsis. */
export const MAX_PRINTED = 300;
/** A whole message of the API server (a refusal, its causes, a warning): longer, as it may list several causes. */
export const MAX_MESSAGE = 2000;

// eslint-disable-next-line no-control-regex -- the controls are what it finds
const CONTROLS = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/g;

function visible(c: string): string {
  const code = c.charCodeAt(0);
  if (c === '\x1b') return '^[';
  if (c === '\r') return '\\r';
  if (c === '\t') return '\\t';
  if (code < 0x20) return `^${String.fromCharCode(code + 64)}`;
  if (code === 0x7f) return '^?';
  return `\\u${code.toString(16).padStart(4, '0')}`;
}

/** The text with its controls written out, cut at `max` characters (code points) with an ellipsis. */
export function printable(text: string, max: number = MAX_PRINTED): string {
  const escaped = text.replace(CONTROLS, visible);
  if (escaped.length <= max) return escaped;
  const chars = Array.from(escaped);
  return chars.length <= max ? escaped : `${chars.slice(0, max - 1).join('')}…`;
}
