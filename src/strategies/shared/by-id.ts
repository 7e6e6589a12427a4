/**
 * Per-target state of a strategy, kept by target id across target-set changes: an id that stays
 * keeps its state, an id that leaves loses it, a new id gets fresh state.
 */
export function alignById<S>(byId: Map<string, S>, targets: readonly { readonly id: string }[], create: (id: string) => S): S[] {
  const ids = new Set(targets.map((t) => t.id));
  for (const id of byId.keys()) if (!ids.has(id)) byId.delete(id);
  return targets.map((t) => {
    let state = byId.get(t.id);
    if (state === undefined) {
      state = create(t.id);
      byId.set(t.id, state);
    }
    return state;
  });
}
