// The page's state lives in its URL, so that any state can be shared:
// read reads the query, write replaces it (no history entry per change).

export function read() {
  return new URLSearchParams(location.search);
}

// write replaces the query with the non-empty values of state.
export function write(state) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(state)) {
    if (v === undefined || v === null || v === '') continue;
    q.set(k, String(v));
  }
  const profile = read().get('profile');
  if (profile && !q.has('profile')) q.set('profile', profile);
  const qs = q.toString();
  history.replaceState(history.state, '', location.pathname + (qs ? '?' + qs : ''));
}
