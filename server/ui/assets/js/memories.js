// Memories: browse a profile's memories page by page (the API's cursor),
// filter them, search their text (the lexical leg alone), open one to see
// every field, edit it, delete it, and delete what a filter selects after
// counting it.
import { call, params } from './api.js';
import { h, clear, field, input, select, fmt, shortId, when } from './dom.js';
import { clearErrors, showError } from './forms.js';
import * as url from './url.js';

const KINDS = [['', 'any'], 'episodic', 'semantic', 'identity'];
const FILTERS = ['session', 'project', 'actor', 'kind', 'after', 'before'];

// The API's field names → this page's controls.
function filterControl(f) {
  if (f.startsWith('metadata')) return 'm-meta';
  return { session: 'm-session', sessions: 'm-session', project: 'm-project', actor: 'm-actor', actors: 'm-actor',
    kind: 'm-kind', kinds: 'm-kind', after: 'm-after', before: 'm-before', limit: 'm-limit', q: 'm-q', cursor: 'm-q' }[f];
}

const EDIT_FIELDS = { content: 'e-content', text: 'e-content', kind: 'e-kind', project: 'e-project', session: 'e-session',
  actor: 'e-actor', occurred_at: 'e-occurred_at', seq: 'e-seq', importance: 'e-importance', metadata: 'e-metadata' };

let root;
let st;

function readState() {
  const q = url.read();
  const o = {};
  for (const f of [...FILTERS, 'meta', 'q', 'id', 'cursor', 'limit']) o[f] = q.get(f) || '';
  o.limit = o.limit || '50';
  return o;
}

export function render(main) {
  root = main;
  st = readState();
  st.trail = [];
  const form = h('form', { id: 'm-filters', class: 'panel filters', novalidate: true, 'aria-labelledby': 'm-filters-h' },
    h('h2', { id: 'm-filters-h', text: 'Filter and search' }),
    h('div', { class: 'grid' },
      field('Search text', input('m-q', st.q, { type: 'search', placeholder: 'words to find (full text)' }),
        'the lexical leg alone, ranked'),
      field('Session', input('m-session', st.session)),
      field('Project', input('m-project', st.project)),
      field('Actor', input('m-actor', st.actor, { placeholder: 'comma-separated' })),
      field('Kind', select('m-kind', KINDS, st.kind)),
      field('Occurred after', input('m-after', st.after, { placeholder: '2023-05-08T00:00:00Z' })),
      field('Occurred before', input('m-before', st.before, { placeholder: 'RFC 3339' })),
      field('Metadata', h('textarea', { id: 'm-meta', rows: 2, value: st.meta, placeholder: 'KEY=VALUE, one a line' })),
      field('Page size', input('m-limit', st.limit, { type: 'number', min: 1, max: 1000 }))),
    h('div', { class: 'actions' },
      h('button', { type: 'submit', text: 'Apply' }),
      h('button', { type: 'button', class: 'secondary', text: 'Clear', onclick: () => {
        for (const f of [...FILTERS, 'meta', 'q']) form.querySelector('#m-' + f).value = '';
        apply();
      } }),
      h('button', { type: 'button', id: 'm-delete-matching', class: 'danger', text: 'Delete matching…', onclick: previewDelete })),
    h('p', { id: 'm-form-error', class: 'form-error', role: 'alert' }),
    h('div', { id: 'm-bulk', class: 'bulk', 'aria-live': 'polite' }));
  form.addEventListener('submit', ev => { ev.preventDefault(); apply(); });
  const layout = h('div', { class: 'split' },
    h('section', { class: 'panel list', 'aria-labelledby': 'm-list-h' },
      h('h2', { id: 'm-list-h', text: 'Memories' }),
      h('p', { id: 'm-summary', class: 'summary', role: 'status' }),
      h('div', { id: 'm-table', class: 'scroll', tabindex: 0, role: 'region', 'aria-label': 'memories' }),
      h('div', { class: 'pager' },
        h('button', { type: 'button', id: 'm-first', class: 'secondary', text: 'First page', onclick: () => { st.cursor = ''; st.trail = []; load(); } }),
        h('button', { type: 'button', id: 'm-prev', class: 'secondary', text: '◀ Previous page', onclick: () => { st.cursor = st.trail.pop() || ''; load(); } }),
        h('button', { type: 'button', id: 'm-next', text: 'Next page ▶', onclick: () => { st.trail.push(st.cursor); st.cursor = st.next; load(); } }))),
    h('section', { id: 'm-detail', class: 'panel detail', 'aria-labelledby': 'm-detail-h', hidden: true }));
  root.append(form, layout);
  load();
  if (st.id) open(st.id);
}

function readForm() {
  for (const f of [...FILTERS, 'meta', 'q', 'limit']) st[f] = root.querySelector('#m-' + f).value.trim();
}

function apply() {
  readForm();
  st.cursor = '';
  st.trail = [];
  load();
}

function save() {
  url.write({ q: st.q, session: st.session, project: st.project, actor: st.actor, kind: st.kind, after: st.after,
    before: st.before, meta: st.meta, limit: st.limit === '50' ? '' : st.limit, cursor: st.cursor, id: st.id });
}

// filterQuery is the API query of the filters (without search text or
// paging); a metadata line that is not KEY=VALUE throws.
function filterQuery() {
  const q = params({ session: st.session, project: st.project, actor: st.actor, kind: st.kind, after: st.after, before: st.before });
  st.meta.split('\n').map(l => l.trim()).filter(Boolean).forEach((line, i) => {
    const at = line.indexOf('=');
    if (at <= 0) throw Object.assign(new Error(`metadata line ${i + 1} ("${line}"): write KEY=VALUE`), { local: 'm-meta' });
    q.set('metadata.' + line.slice(0, at).trim(), line.slice(at + 1).trim());
  });
  return q;
}

function localError(e) {
  if (!e.local) return false;
  root.querySelector('#err-' + e.local).textContent = e.message;
  root.querySelector('#' + e.local).setAttribute('aria-invalid', 'true');
  return true;
}

async function load() {
  const form = root.querySelector('#m-filters');
  clearErrors(form);
  root.querySelector('#m-form-error').textContent = '';
  save();
  const table = root.querySelector('#m-table');
  const summary = root.querySelector('#m-summary');
  let q;
  try {
    q = filterQuery();
  } catch (e) {
    if (!localError(e)) throw e;
    return;
  }
  q.set('limit', st.limit);
  summary.textContent = 'loading…';
  try {
    if (st.q) {
      q.set('q', st.q);
      const out = await call('GET', '/v1/search/lexical', { query: q });
      st.next = '';
      summary.textContent = out.results.length
        ? `${out.results.length} best full-text matches for “${st.q}”` : `nothing matches “${st.q}”` + (out.skipped ? ` (${out.skipped})` : '');
      clear(table).append(memoryTable(out.results, true));
    } else {
      if (st.cursor) q.set('cursor', st.cursor);
      q.set('total', 'true');
      const out = await call('GET', '/v1/memories', { query: q });
      st.next = out.next_cursor || '';
      const from = st.trail.length * Number(st.limit) + 1;
      summary.textContent = out.total === 0 ? 'no memory matches'
        : `${out.total} memor${out.total === 1 ? 'y' : 'ies'} match; showing ${from}–${from + out.memories.length - 1}, oldest first`;
      clear(table).append(memoryTable(out.memories, false));
    }
  } catch (e) {
    summary.textContent = '';
    clear(table);
    showError(form, e, filterControl, 'm-form-error');
    return;
  }
  root.querySelector('#m-next').disabled = !st.next;
  root.querySelector('#m-prev').disabled = st.trail.length === 0;
  root.querySelector('#m-first').disabled = !st.cursor;
}

function memoryTable(ms, ranked) {
  if (!ms.length) return h('p', { class: 'empty', text: 'Nothing to show.' });
  return h('table', { class: 'memories' },
    h('thead', {}, h('tr', {},
      ranked ? [h('th', { scope: 'col', text: '#' }), h('th', { scope: 'col', text: 'BM25' })] : null,
      ['Occurred', 'Session', 'Actor', 'Kind', 'Content', 'Imp.'].map(t => h('th', { scope: 'col', text: t })))),
    h('tbody', {}, ms.map(m => h('tr', { 'data-id': m.id },
      ranked ? [h('td', { class: 'num', text: m.rank }), h('td', { class: 'num', text: fmt(m.legs?.lexical?.score, 2) })] : null,
      h('td', { class: 'when', text: when(m.occurred_at) }),
      h('td', { text: m.session || '' }),
      h('td', { text: m.actor || '' }),
      h('td', { text: m.kind }),
      h('td', { class: 'content' }, h('button', { type: 'button', class: 'link', text: snippet(m.content, 140),
        'aria-label': 'Open memory ' + m.id + ': ' + snippet(m.content, 60), onclick: () => open(m.id) })),
      h('td', { class: 'num', text: fmt(m.importance, 2) })))));
}

function snippet(t, n) {
  return t.length > n ? t.slice(0, n - 1) + '…' : t;
}

// The fields every memory has, in this order; any other field the API
// returns (links between memories, concepts) is shown after them.
const KNOWN = ['id', 'content', 'kind', 'profile', 'project', 'session', 'actor', 'seq', 'occurred_at', 'created_at',
  'importance', 'accessed_at', 'access_count', 'embedding_model', 'metadata'];
const LINKS = ['supersedes', 'superseded_by', 'replaces', 'replaced_by'];

async function open(id) {
  const panel = root.querySelector('#m-detail');
  st.id = id;
  save();
  panel.hidden = false;
  clear(panel).append(h('h2', { id: 'm-detail-h', text: 'Memory' }), h('p', { text: 'loading…' }));
  let m;
  try {
    m = await call('GET', '/v1/memories/' + encodeURIComponent(id));
  } catch (e) {
    clear(panel).append(h('h2', { id: 'm-detail-h', text: 'Memory ' + shortId(id) }), h('p', { class: 'form-error', role: 'alert', text: e.message }),
      closeButton());
    return;
  }
  showMemory(panel, m);
}

function closeButton() {
  return h('button', { type: 'button', class: 'secondary', text: 'Close', onclick: () => {
    st.id = '';
    save();
    root.querySelector('#m-detail').hidden = true;
  } });
}

function showMemory(panel, m) {
  const dl = h('dl', { class: 'fields' });
  const row = (k, v) => dl.append(h('dt', { text: k }), h('dd', {}, v));
  for (const k of KNOWN) {
    if (!(k in m)) continue;
    let v = m[k];
    if (k === 'metadata') v = h('pre', { text: JSON.stringify(v, null, 2) });
    else if (k.endsWith('_at')) v = when(v) || '—';
    else if (k === 'content') v = h('p', { class: 'content-full', text: v });
    row(k, v);
  }
  for (const [k, v] of Object.entries(m)) {
    if (KNOWN.includes(k)) continue;
    if (LINKS.includes(k)) {
      const ids = Array.isArray(v) ? v : [v];
      row(k, ids.map(id => h('button', { type: 'button', class: 'link', text: shortId(String(id)), onclick: () => open(String(id)) })));
    } else if (k === 'concepts' && Array.isArray(v)) {
      row(k, h('ul', { class: 'tags' }, v.map(c => h('li', { text: typeof c === 'string' ? c : JSON.stringify(c) }))));
    } else {
      row(k, typeof v === 'string' ? v : h('pre', { text: JSON.stringify(v, null, 2) }));
    }
  }
  const edit = editForm(m);
  const del = h('div', { class: 'confirm', id: 'm-del-confirm', hidden: true },
    h('p', { text: 'Delete this memory for good?' }),
    h('button', { type: 'button', id: 'm-del-yes', class: 'danger', text: 'Delete for good', onclick: async () => {
      try {
        await call('DELETE', '/v1/memories/' + encodeURIComponent(m.id));
      } catch (e) {
        panel.querySelector('#m-del-error').textContent = e.message;
        return;
      }
      st.id = '';
      panel.hidden = true;
      load();
      root.querySelector('#m-summary').textContent += ' · deleted ' + m.id;
    } }),
    h('button', { type: 'button', class: 'secondary', text: 'Cancel', onclick: () => { del.hidden = true; } }),
    h('p', { id: 'm-del-error', class: 'form-error', role: 'alert' }));
  clear(panel).append(
    h('h2', { id: 'm-detail-h', text: 'Memory ' + shortId(m.id) }),
    dl, edit,
    h('div', { class: 'actions' },
      h('button', { type: 'button', id: 'm-delete', class: 'danger', text: 'Delete…', onclick: () => {
        del.hidden = false;
        panel.querySelector('#m-del-yes').focus();
      } }),
      closeButton()),
    del);
}

function editForm(m) {
  const form = h('form', { id: 'm-edit', class: 'edit', novalidate: true, 'aria-labelledby': 'm-edit-h' },
    h('h3', { id: 'm-edit-h', text: 'Edit' }),
    field('Content', h('textarea', { id: 'e-content', rows: 4, value: m.content })),
    h('div', { class: 'grid' },
      field('Kind', select('e-kind', ['episodic', 'semantic', 'identity'], m.kind)),
      field('Project', input('e-project', m.project || '')),
      field('Session', input('e-session', m.session || '')),
      field('Actor', input('e-actor', m.actor || '')),
      field('Occurred at', input('e-occurred_at', m.occurred_at || '')),
      field('Seq', input('e-seq', m.seq ?? '', { inputMode: 'numeric' })),
      field('Importance', input('e-importance', m.importance, { inputMode: 'decimal' }), '0 to 1')),
    field('Metadata (JSON)', h('textarea', { id: 'e-metadata', rows: 3, value: m.metadata ? JSON.stringify(m.metadata, null, 2) : '' })),
    h('div', { class: 'actions' }, h('button', { type: 'submit', id: 'e-save', text: 'Save changes' })),
    h('p', { id: 'e-error', class: 'form-error', role: 'alert' }),
    h('p', { id: 'e-status', class: 'status', role: 'status' }));
  form.addEventListener('submit', async ev => {
    ev.preventDefault();
    clearErrors(form);
    form.querySelector('#e-error').textContent = '';
    form.querySelector('#e-status').textContent = '';
    const patch = {};
    const val = id => form.querySelector('#' + id).value;
    for (const k of ['content', 'kind', 'project', 'session', 'actor', 'occurred_at']) {
      if (val('e-' + k) !== (m[k] ?? '')) patch[k] = val('e-' + k);
    }
    for (const k of ['seq', 'importance']) {
      const v = val('e-' + k).trim();
      if (v !== String(m[k] ?? '')) patch[k] = v !== '' && Number.isFinite(Number(v)) ? Number(v) : v;
    }
    const md = val('e-metadata').trim();
    const was = m.metadata ? JSON.stringify(m.metadata) : '';
    if (md === '' && was !== '') patch.metadata = null;
    else if (md !== '') {
      try {
        const parsed = JSON.parse(md);
        if (JSON.stringify(parsed) !== was) patch.metadata = parsed;
      } catch (e) {
        form.querySelector('#err-e-metadata').textContent = 'metadata is not JSON: ' + e.message;
        form.querySelector('#e-metadata').setAttribute('aria-invalid', 'true');
        return;
      }
    }
    if (!Object.keys(patch).length) {
      form.querySelector('#e-status').textContent = 'nothing changed';
      return;
    }
    let next;
    try {
      next = await call('PATCH', '/v1/memories/' + encodeURIComponent(m.id), { body: patch });
    } catch (e) {
      showError(form, e, EDIT_FIELDS, 'e-error');
      return;
    }
    showMemory(root.querySelector('#m-detail'), next);
    root.querySelector('#e-status').textContent = 'saved: ' + Object.keys(patch).join(', ');
    load();
  });
  return form;
}

// previewDelete counts what the filters select, then offers to delete
// exactly that (the filters as counted, whatever the form holds later).
async function previewDelete() {
  const form = root.querySelector('#m-filters');
  const box = root.querySelector('#m-bulk');
  clearErrors(form);
  root.querySelector('#m-form-error').textContent = '';
  readForm();
  clear(box);
  let q;
  try {
    q = filterQuery();
  } catch (e) {
    if (!localError(e)) throw e;
    return;
  }
  if (![...q.keys()].length) {
    box.append(h('p', { class: 'form-error', role: 'alert',
      text: 'Give at least one filter (session, project, actor, kind, a time range or metadata): the inspector does not delete a whole profile.' }));
    return;
  }
  const described = [...q.entries()].map(([k, v]) => `${k}=${v}`).join(', ');
  let total;
  try {
    const count = new URLSearchParams(q);
    count.set('limit', '1');
    count.set('total', 'true');
    total = (await call('GET', '/v1/memories', { query: count })).total;
  } catch (e) {
    showError(form, e, filterControl, 'm-form-error');
    return;
  }
  if (total === 0) {
    box.append(h('p', { id: 'm-bulk-count', text: `No memory matches ${described}: nothing to delete.` }));
    return;
  }
  const yes = h('button', { type: 'button', id: 'm-bulk-yes', class: 'danger', text: `Delete ${total} memor${total === 1 ? 'y' : 'ies'}`,
    onclick: async () => {
      yes.disabled = true;
      let out;
      try {
        out = await call('DELETE', '/v1/memories', { query: q });
      } catch (e) {
        clear(box).append(h('p', { class: 'form-error', role: 'alert', text: e.message }));
        return;
      }
      clear(box).append(h('p', { id: 'm-bulk-done', class: 'ok', text: `Deleted ${out.deleted} memor${out.deleted === 1 ? 'y' : 'ies'} (${described}).` }));
      st.cursor = '';
      st.trail = [];
      load();
    } });
  box.append(h('div', { class: 'confirm' },
    h('p', { id: 'm-bulk-count' }, h('strong', { text: `${total} memor${total === 1 ? 'y matches' : 'ies match'}` }), ` ${described}.`,
      st.q ? ' (The search text is not a filter: it is not part of the deletion.)' : ''),
    yes,
    h('button', { type: 'button', class: 'secondary', text: 'Cancel', onclick: () => clear(box) })));
  yes.focus();
}
