// The /v1 API, called with the key and profile the user gave (the key is
// kept in this tab's sessionStorage, never in the URL).

const KEY = 'mnemo.key';
const PROFILE = 'mnemo.profile';

export const conn = {
  get key() { return sessionStorage.getItem(KEY) || ''; },
  set key(v) { v ? sessionStorage.setItem(KEY, v) : sessionStorage.removeItem(KEY); },
  get profile() { return sessionStorage.getItem(PROFILE) || ''; },
  set profile(v) { v ? sessionStorage.setItem(PROFILE, v) : sessionStorage.removeItem(PROFILE); },
};

// ApiError is an answer other than 2xx: its status, the API's code and
// message, and the field the message names (its first word when that is
// a field name such as "weights.lexical = 7: …" or "kind[0] = …").
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = fieldOf(message);
  }
}

export function fieldOf(msg) {
  const m = /^([A-Za-z_][\w.]*)(\[\d+\])*(?=\s*=|\s*:|\s+is\b|\s+\(|\s+")/.exec(msg || '') ||
    /^malformed JSON at offset \d+: ([A-Za-z_][\w.]*)(\[\d+\])* must be/.exec(msg || '');
  return m ? m[1] : '';
}

// call sends one request; query is an object or URLSearchParams (empty
// values left out), body is sent as JSON.
export async function call(method, path, { query, body, signal } = {}) {
  let url = path;
  if (query) {
    const q = query instanceof URLSearchParams ? query : params(query);
    const qs = q.toString();
    if (qs) url += '?' + qs;
  }
  const headers = { Accept: 'application/json' };
  if (conn.key) headers.Authorization = 'Bearer ' + conn.key;
  if (conn.profile) headers['X-Mnemo-Profile'] = conn.profile;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let res;
  try {
    res = await fetch(url, {
      method, headers, signal, cache: 'no-store', credentials: 'omit',
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, 'network', 'the server does not answer: ' + e.message);
  }
  if (res.status === 204) return null;
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  if (!res.ok) {
    throw new ApiError(res.status, data?.code || String(res.status), data?.error || text || res.statusText);
  }
  return data;
}

export function params(obj) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(obj)) {
    if (v === undefined || v === null || v === '') continue;
    if (Array.isArray(v)) v.forEach(x => q.append(k, x));
    else q.set(k, String(v));
  }
  return q;
}
