// How many field errors an answer lists. The API server lists every field error (NewInvalid), but
// its own request body limit bounds them; a review sent from anywhere on the cluster network is
// not so bounded: 100,000 wrong-typed list items in a 190 KiB body made a 30 MB answer and held
// ~100 MiB while it was built (bench/history/2026-12-03-issue-18.md, "Hostile flood").

/** The most causes an answer lists; past it the answer says the list is cut (webhook/status.ts). */
export const MAX_FIELD_ERRORS = 1000;

/**
 * What a producer of field errors keeps at most: one more than an answer lists, so that the
 * answer knows the list was cut without the producer holding the rest.
 */
export const KEPT_FIELD_ERRORS = MAX_FIELD_ERRORS + 1;
