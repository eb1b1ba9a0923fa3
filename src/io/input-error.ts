/** Input the user gave that cannot be used: reported as a message, not a stack. */
export class InputError extends Error {}
