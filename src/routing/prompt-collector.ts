/**
 * Collectors of a body's prompt text: pieces are taken in rendering order until the budget (in
 * UTF-16 units) is reached. `TextCollector` keeps them as a string (`promptText`),
 * `Utf16Collector` writes them straight into the buffer that is hashed (text-mode routing input).
 */
import { canonicalPrefix } from "./canonical-json.js";
import type { PrefixWriter } from "./prefix-writer.js";

function escape(s: string): string {
  return s.includes("\u0000") ? s.replaceAll("\u0000", "\u0000\u0000") : s;
}

/**
 * Takes text pieces until the budget (in UTF-16 units) is reached; later pieces are skipped. What
 * becomes of a kept piece is the subclass's: the string collector keeps it, the UTF-16 one writes it.
 */
export abstract class Collector {
  protected length = 0;
  /** Where the leading system part (tools, instructions, system and developer messages) ended, in units; set by {@link markLead}. */
  leadEnd: number | undefined;
  constructor(private readonly budget: number) {}
  get full(): boolean {
    return this.length >= this.budget;
  }
  /** Marks the end of the leading system part here (only while under the budget: past it, the position is unknown). */
  markLead(): void {
    if (this.length < this.budget) this.leadEnd = this.length;
  }
  protected abstract take(piece: string): void;
  push(...pieces: string[]): void {
    for (const piece of pieces) {
      if (this.length >= this.budget) return;
      const room = this.budget - this.length;
      // Keep one extra unit so a surrogate pair at the cut can still be completed.
      const kept = piece.length > room + 1 ? piece.slice(0, room + 1) : piece;
      this.take(kept);
      this.length += kept.length;
    }
  }
  /**
   * A marker, then raw content with every U+0000 doubled. The content is cut to the budget
   * before escaping, so a 1 MB message costs no more than the prefix it contributes.
   */
  field(marker: string, raw: string): void {
    this.push(marker);
    if (this.length >= this.budget) return;
    const room = this.budget - this.length;
    if (raw.length > room + 1) {
      // Escaping only lengthens it: the piece fills the budget whatever it holds.
      this.takeCut(raw, room + 1);
      this.length += room + 1;
    } else {
      this.push(escape(raw));
    }
  }
  /**
   * A marker, then the canonical JSON of `value` — only as much of it as the budget takes: the
   * rest of the value is never visited (a 10,000-level tool schema past the prefix costs nothing
   * and cannot fail).
   */
  json(marker: string, value: unknown): void {
    this.push(marker);
    if (this.length >= this.budget) return;
    this.push(canonicalPrefix(value, this.budget - this.length + 1));
  }
  /** Takes the first `units` units of escaped `raw` (longer than that). */
  protected takeCut(raw: string, units: number): void {
    this.take(escape(raw.slice(0, units)).slice(0, units));
  }
}

/**
 * Counts the units of the whole prompt text without keeping it: string pieces by their length (a
 * 1 MB message costs one scan for U+0000), JSON pieces (tools, other parts) by their canonical
 * JSON, cut at `jsonCap` units — past it, or for JSON that cannot be canonicalized, the count is
 * not exact (`exact` false).
 */
export class LengthCollector extends Collector {
  exact = true;
  constructor(private readonly jsonCap: number) {
    super(Number.POSITIVE_INFINITY);
  }
  get units(): number {
    return this.length;
  }
  protected take(): void {}
  override field(marker: string, raw: string): void {
    this.length += marker.length + (raw.includes("\u0000") ? raw.replaceAll("\u0000", "\u0000\u0000").length : raw.length);
  }
  override json(marker: string, value: unknown): void {
    let units = this.jsonCap;
    try {
      units = canonicalPrefix(value, this.jsonCap).length;
    } catch {
      // Too deep past the routing prefix: the prefix itself never reads it.
    }
    if (units >= this.jsonCap) this.exact = false;
    this.length += marker.length + units;
  }
}

export class TextCollector extends Collector {
  private readonly parts: string[] = [];
  protected take(piece: string): void {
    this.parts.push(piece);
  }
  text(): string {
    return this.parts.length === 1 ? (this.parts[0] as string) : this.parts.join("");
  }
}

/**
 * Writes the first `maxPoints` code points of the collected text as UTF-16LE, piece by piece, with
 * the collector's budget at 2 × `maxPoints` units, as {@link textPrefix} reads it. Counting code
 * points piece by piece equals counting them in the joined text: every piece after the first
 * starts with a marker (U+0000), so no surrogate pair spans two pieces.
 */
export class Utf16Collector extends Collector {
  private points = 0;
  constructor(
    private readonly maxPoints: number,
    private readonly out: PrefixWriter,
  ) {
    super(2 * maxPoints);
  }
  /** Only as much of a long message as the code points still wanted: escaping reads what it is given. */
  protected override takeCut(raw: string, units: number): void {
    const left = this.maxPoints - this.points;
    if (left <= 0) return;
    // `left` code points are at most `left` units of one-byte text, `2 × left` otherwise.
    const wanted = (NOT_LATIN1.test(raw) ? 2 * left : left) + 1;
    super.takeCut(raw, Math.min(units, wanted));
  }

  protected take(piece: string): void {
    const left = this.maxPoints - this.points;
    if (left <= 0) return;
    // V8 answers this at once for one-byte strings (no surrogates possible).
    if (!SURROGATE.test(piece)) {
      const n = Math.min(piece.length, left);
      this.out.utf16(piece, n);
      this.points += n;
      return;
    }
    let units = 0;
    let points = 0;
    for (; points < left && units < piece.length; points++) {
      const c = piece.charCodeAt(units);
      const d = units + 1 < piece.length ? piece.charCodeAt(units + 1) : 0;
      units += c >= 0xd800 && c <= 0xdbff && d >= 0xdc00 && d <= 0xdfff ? 2 : 1;
    }
    this.out.utf16(piece, units);
    this.points += points;
  }
}

const SURROGATE = /[\ud800-\udfff]/;
/** Matches a character beyond U+00FF; V8 answers at once for one-byte strings. */
const NOT_LATIN1 = /[^\u0000-\u00ff]/;

/** The first `n` code points of `s`; a surrogate pair is never split. */
export function truncateCodePoints(s: string, n: number): string {
  if (s.length <= n) return s;
  // Without surrogates in the first n units, n units are n code points. V8 answers this test at
  // once for one-byte strings, which cuts the prefix cost of Latin-1 prompts by ~20x.
  const head = s.slice(0, n);
  if (!SURROGATE.test(head)) return head;
  let units = 0;
  for (let points = 0; points < n && units < s.length; points++) {
    const c = s.charCodeAt(units);
    if (c >= 0xd800 && c <= 0xdbff && units + 1 < s.length) {
      const d = s.charCodeAt(units + 1);
      units += d >= 0xdc00 && d <= 0xdfff ? 2 : 1;
    } else {
      units += 1;
    }
  }
  return s.slice(0, units);
}
