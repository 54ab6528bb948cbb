/**
 * Text as Kasse accepts and counts it, one rule for every field of every operation and form.
 *
 * - Lengths are in characters: Unicode code points, as JSON Schema's `maxLength` counts them (Ajv's `ucs2length`).
 *   An emoji outside the Basic Multilingual Plane is one character, not the two UTF-16 units of `String.length`.
 * - Text is well-formed Unicode. JSON can spell a lone UTF-16 surrogate (`"\ud800"`) and JavaScript strings can hold
 *   one, but it is no character: it has no UTF-8 form to store, hash or sign. Such text is refused, never replaced.
 */

/** Characters (code points) in `s`; a surrogate pair counts once, a lone surrogate once. */
export function textLength(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length - 1; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n--;
        i++;
      }
    }
  }
  return n;
}

/** A lone surrogate: with the `u` flag a pair is one code point, so only an unpaired half matches. */
const LONE_SURROGATE = /\p{Cs}/u;

/** True when `s` is well-formed Unicode (`String.prototype.isWellFormed`). */
export function isWellFormed(s: string): boolean {
  return !LONE_SURROGATE.test(s);
}

/** Where a value holds text that is not well-formed: the path of the string, or of the object whose key is. */
export interface IllFormedText {
  path: (string | number)[];
  /** True when the offending text is a key of the object at `path`, not a value. */
  key: boolean;
}

/** The first string (value or object key) in `value` that is not well-formed Unicode, depth first; null when none. */
export function illFormedText(value: unknown): IllFormedText | null {
  const path: (string | number)[] = [];
  const walk = (v: unknown): IllFormedText | null => {
    if (typeof v === 'string') return isWellFormed(v) ? null : { path: [...path], key: false };
    if (v === null || typeof v !== 'object') return null;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        path.push(i);
        const found = walk(v[i]);
        path.pop();
        if (found) return found;
      }
      return null;
    }
    for (const [k, inner] of Object.entries(v)) {
      if (!isWellFormed(k)) return { path: [...path], key: true };
      path.push(k);
      const found = walk(inner);
      path.pop();
      if (found) return found;
    }
    return null;
  };
  return walk(value);
}

/**
 * True when JSON text may hold a lone surrogate once parsed: only a `\uD800`–`\uDFFF` escape can make one (a body is
 * decoded from UTF-8, which has no surrogates). Lets the parser skip the walk for nearly every body.
 */
export function mayHoldSurrogateEscape(json: string): boolean {
  return /\\u[dD][89a-fA-F]/.test(json);
}
