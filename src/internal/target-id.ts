/**
 * Target ids as they leave the router in a header: an id made of visible ASCII other than `%`
 * goes as it is; any other id is percent-encoded (UTF-8), so `decodeURIComponent(value)` gives the
 * id back in both cases and the value is always a valid header value. Ids are well-formed
 * UTF-16 (options.ts refuses lone surrogates), so the encoding cannot throw.
 */

/** A lone surrogate: half of a pair, without its other half (not encodable as UTF-8). */
const LONE_SURROGATE = /\p{Surrogate}/u;
/** Visible ASCII but `%`: a header value as it is, and its own percent-decoding. */
const HEADER_SAFE = /^[!-$&-~]+$/;

/** Whether `id` is well-formed UTF-16 (no lone surrogate): it has a UTF-8 form, and a header form. */
export function isWellFormedId(id: string): boolean {
  return !LONE_SURROGATE.test(id);
}

/** The header form of target id `id` (see the file header). */
export function headerId(id: string): string {
  return HEADER_SAFE.test(id) ? id : encodeURIComponent(id);
}
