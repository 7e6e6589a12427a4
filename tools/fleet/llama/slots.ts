/**
 * Slot selection and the waiting queue of one llama.cpp engine process, as llama-server does
 * them (its `get_available_slot`), pure and synchronous: no llama.cpp here.
 *
 * An engine has K slots (llama.cpp context sequences), each holding the KV cache of the tokens
 * it last evaluated. A request takes an idle slot:
 *
 *   1. by similarity: among idle slots holding tokens, the one whose longest common prefix (LCP)
 *      with the prompt is the largest fraction of the prompt, if that fraction exceeds the
 *      threshold (`--slot-prompt-similarity`, 0.1 by default; ties: the lowest slot id);
 *   2. otherwise the least recently released idle slot (never-used slots first; ties: the
 *      highest slot id, as llama-server's `<=` comparison picks).
 *
 * The chosen slot keeps its first min(LCP, prompt length − 1) tokens and evaluates the rest (at
 * least one token is evaluated, for the logits of the first output token); the kept count is
 * the request's `cached_tokens`. A slot that is busy is never shared: a second request for a
 * prompt running in one slot starts cold in another. When every slot is busy, requests wait in
 * FIFO order and the head takes the next slot released.
 *
 * Cost: choosing is O(K · LCP) token comparisons; releasing dispatches the queue head in O(K).
 */

/** llama-server's default `--slot-prompt-similarity`. */
export const DEFAULT_SLOT_PROMPT_SIMILARITY = 0.1;

/** What the choice reads of a slot. */
export interface SlotView {
  /** Tokens the slot holds, in order. */
  readonly tokens: ArrayLike<number>;
  /** Whether a request is running in it. */
  readonly busy: boolean;
  /** When it was last released, in any increasing unit; −1 if never. */
  readonly lastUsed: number;
}

/** A slot chosen for a prompt, and why. */
export interface SlotChoice {
  /** Index of the slot. */
  readonly slot: number;
  /** `similarity`: its LCP with the prompt passed the threshold; `lru`: least recently used. */
  readonly by: "similarity" | "lru";
  /** Longest common prefix of the slot's tokens and the prompt. */
  readonly commonPrefix: number;
  /** Tokens kept and not evaluated again: min(commonPrefix, prompt length − 1), at least 0. */
  readonly reused: number;
}

/** Length of the longest common prefix of `a` and `b`. */
export function commonPrefixLength(a: ArrayLike<number>, b: ArrayLike<number>): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/**
 * Chooses an idle slot for `prompt` as llama-server does (see the file header), or `undefined`
 * when every slot is busy.
 * @param similarity - the threshold in [0, 1); 0 turns selection by similarity off (LRU only)
 */
export function chooseSlot(slots: readonly SlotView[], prompt: ArrayLike<number>, similarity: number): SlotChoice | undefined {
  let chosen = -1;
  let by: SlotChoice["by"] = "lru";
  if (similarity !== 0 && prompt.length > 0) {
    let best = 0;
    slots.forEach((s, i) => {
      if (s.busy || s.tokens.length === 0) return;
      const sim = commonPrefixLength(s.tokens, prompt) / prompt.length;
      if (sim > best && sim > similarity) {
        best = sim;
        chosen = i;
      }
    });
    if (chosen >= 0) by = "similarity";
  }
  if (chosen < 0) {
    let last = -1;
    slots.forEach((s, i) => {
      if (s.busy) return;
      if (chosen < 0 || s.lastUsed <= last) {
        last = s.lastUsed;
        chosen = i;
      }
    });
  }
  if (chosen < 0) return undefined;
  const commonPrefix = commonPrefixLength(slots[chosen]!.tokens, prompt);
  return { slot: chosen, by, commonPrefix, reused: Math.max(0, Math.min(commonPrefix, prompt.length - 1)) };
}

/** Checks a `slotPromptSimilarity` option. */
export function checkSimilarity(name: string, value: number): number {
  if (typeof value !== "number" || !(value >= 0 && value < 1)) {
    throw new RangeError(`Expected \`${name}\` to be a number from 0 (inclusive) to 1 (exclusive), got ${String(value)}`);
  }
  return value;
}

interface Slot {
  tokens: readonly number[];
  busy: boolean;
  lastUsed: number;
}

interface Waiter {
  readonly prompt: readonly number[];
  readonly grant: (choice: SlotChoice) => void;
  done: boolean;
}

/** A request's place: in the queue, or granted. */
export interface SlotTicket {
  /** Leaves the queue; false if the slot was already granted (then release it instead). */
  cancel(): boolean;
}

/**
 * The slots of one engine and its FIFO queue (see the file header). A request gets its slot
 * through `grant`, synchronously when one is idle, else when it reaches the head of the queue
 * and a slot is released; the slot is busy until {@link release}.
 */
export class SlotScheduler {
  private readonly slots: Slot[];
  private readonly queue: Waiter[] = [];
  private releases = 0;

  /**
   * @param count - number of slots (≥ 1)
   * @param similarity - llama-server's `--slot-prompt-similarity` @default DEFAULT_SLOT_PROMPT_SIMILARITY
   */
  constructor(
    count: number,
    private readonly similarity: number = DEFAULT_SLOT_PROMPT_SIMILARITY,
  ) {
    if (!Number.isSafeInteger(count) || count < 1) throw new RangeError(`Expected \`slots\` to be an integer ≥ 1, got ${String(count)}`);
    checkSimilarity("slotPromptSimilarity", similarity);
    this.slots = Array.from({ length: count }, () => ({ tokens: [], busy: false, lastUsed: -1 }));
  }

  /** Asks for a slot for `prompt`; `grant` runs once, now or when a slot frees up for it. */
  request(prompt: readonly number[], grant: (choice: SlotChoice) => void): SlotTicket {
    const waiter: Waiter = { prompt, grant, done: false };
    this.queue.push(waiter);
    this.dispatch();
    return {
      cancel: () => {
        if (waiter.done) return false;
        waiter.done = true;
        this.queue.splice(this.queue.indexOf(waiter), 1);
        return true;
      },
    };
  }

  /** Frees `slot`, which now holds `tokens` (what its sequence kept), and serves the queue. */
  release(slot: number, tokens: readonly number[]): void {
    const s = this.slots[slot];
    if (s === undefined || !s.busy) throw new RangeError(`Slot ${slot} is not busy`);
    s.busy = false;
    s.tokens = tokens;
    s.lastUsed = this.releases++;
    this.dispatch();
  }

  /** Requests waiting for a slot. */
  get waiting(): number {
    return this.queue.length;
  }

  /** Slots running a request. */
  get running(): number {
    return this.slots.filter((s) => s.busy).length;
  }

  /** Tokens held by every slot, busy or idle (what a busy slot held when it was granted). */
  get heldTokens(): number {
    return this.slots.reduce((n, s) => n + s.tokens.length, 0);
  }

  /** The slots as {@link chooseSlot} sees them. */
  views(): readonly SlotView[] {
    return this.slots.map((s) => ({ tokens: s.tokens, busy: s.busy, lastUsed: s.lastUsed }));
  }

  private dispatch(): void {
    while (this.queue.length > 0) {
      const head = this.queue[0]!;
      const choice = chooseSlot(this.slots, head.prompt, this.similarity);
      if (choice === undefined) return;
      this.queue.shift();
      head.done = true;
      this.slots[choice.slot]!.busy = true;
      head.grant(choice);
    }
  }
}
