// Recall playground: one query, its fused ranking and why — each leg's own
// list with raw and normalised scores, each result's contributions, the
// relevance estimate and its floor, the ranks under the other strategies —
// with weight and strategy controls that recall again as they move and
// show what moved, and a button that stores them as the profile's settings.
import { call } from './api.js';
import { h, clear, field, input, select, debounce, fmt, raw, shortId, when } from './dom.js';
import { clearErrors, showError } from './forms.js';
import * as url from './url.js';

export const LEGS = ['lexical', 'dense', 'recency', 'access'];
const WEIGHT_SETTING = { lexical: 'keyword_weight', dense: 'semantic_weight', recency: 'recency_weight', access: 'access_weight' };
const STRATEGIES = ['weighted_average', 'rrf', 'borda_rank', 'score_weighted_rrf', 'max_confidence', 'dbsf'];
const NORMALIZATIONS = ['minmax', 'zscore', 'none', 'tmm', 'dbsf'];
const KINDS = [['', 'any'], 'episodic', 'semantic', 'identity'];

// The API's field names (recall body, settings) → this page's controls.
function control(f) {
  for (const leg of LEGS) {
    if (f === 'weights.' + leg || f === WEIGHT_SETTING[leg]) return 'r-wn-' + leg;
  }
  if (f === 'weights') return 'r-wn-lexical';
  return { query: 'r-q', q: 'r-q', session: 'r-session', sessions: 'r-session', project: 'r-project', kind: 'r-kind', kinds: 'r-kind',
    actor: 'r-actor', actors: 'r-actor', limit: 'r-limit', strategy: 'r-strategy', k: 'r-k', rrf_k: 'r-k',
    normalization: 'r-norm', 'settings.normalization': 'r-norm', min_relevance: 'r-floor' }[f];
}

let root;
let saved = null; // the profile's settings as stored
let prev = null; // the ranking shown before the last change: {key, ranks: Map id → rank, results}
let shown = null; // the ranking shown now
let inflight = null;
let seq = 0;

function parseWeights(s) {
  const out = {};
  for (const part of (s || '').split(',')) {
    const [k, v] = part.split(/[:=]/);
    if (k && v !== undefined && LEGS.includes(k.trim())) out[k.trim()] = v.trim();
  }
  return out;
}

export function render(main) {
  root = main;
  prev = shown = null;
  const q = url.read();
  const w = parseWeights(q.get('weights'));
  const form = h('form', { id: 'r-form', class: 'panel', novalidate: true, 'aria-labelledby': 'r-form-h' },
    h('h2', { id: 'r-form-h', text: 'Recall' }),
    h('div', { class: 'query-row' },
      field('Query', input('r-q', q.get('q') || '', { type: 'search', placeholder: 'what to recall', required: true })),
      h('button', { type: 'submit', id: 'r-run', text: 'Recall' })),
    h('details', { class: 'scope', open: ['session', 'project', 'kind', 'actor'].some(k => q.get(k)) },
      h('summary', { text: 'Scope and limit' }),
      h('div', { class: 'grid' },
        field('Session', input('r-session', q.get('session') || '', { placeholder: 'comma-separated' })),
        field('Project', input('r-project', q.get('project') || '')),
        field('Kind', select('r-kind', KINDS, q.get('kind') || '')),
        field('Actor', input('r-actor', q.get('actor') || '', { placeholder: 'comma-separated' })),
        field('Limit', input('r-limit', q.get('limit') || '10', { type: 'number', min: 1, max: 1000 })))),
    h('fieldset', { class: 'fusion' },
      h('legend', { text: 'Fusion' }),
      h('div', { class: 'weights' }, LEGS.map(leg => weightControl(leg, w[leg]))),
      h('div', { class: 'grid' },
        field('Strategy', select('r-strategy', STRATEGIES, q.get('strategy') || '')),
        field('Normalization', select('r-norm', NORMALIZATIONS, q.get('norm') || '')),
        field('RRF k', input('r-k', q.get('k') || '', { type: 'number', min: 1, max: 1000, step: 1 })),
        field('Relevance floor', input('r-floor', q.get('floor') || '', { type: 'number', min: 0, max: 1, step: 0.05 }), 'min_relevance'))),
    h('div', { class: 'actions' },
      h('button', { type: 'button', id: 'r-save', text: 'Save as profile settings', onclick: saveSettings }),
      h('button', { type: 'button', id: 'r-reset', class: 'secondary', text: 'Reset to saved settings', onclick: resetControls })),
    h('p', { id: 'r-error', class: 'form-error', role: 'alert' }),
    h('p', { id: 'r-status', class: 'status', role: 'status', 'aria-live': 'polite' }));
  form.addEventListener('submit', ev => { ev.preventDefault(); run(); });
  const live = debounce(() => run(), 250);
  form.addEventListener('input', ev => {
    const t = ev.target;
    if (t.dataset.leg) {
      const other = form.querySelector(t.type === 'range' ? '#r-wn-' + t.dataset.leg : '#r-w-' + t.dataset.leg);
      other.value = t.value;
    }
    if (t.closest('.fusion')) live();
  });
  form.addEventListener('change', ev => {
    if (ev.target.tagName === 'SELECT' && ev.target.closest('.fusion')) live();
  });
  root.append(form,
    h('div', { id: 'r-out', class: 'recall-out' },
      h('section', { class: 'panel fused', 'aria-labelledby': 'r-fused-h' },
        h('h2', { id: 'r-fused-h', text: 'Fused ranking' }),
        h('div', { id: 'r-diff', class: 'diff', 'aria-live': 'polite' }),
        h('ol', { id: 'r-results', class: 'results' })),
      h('section', { class: 'panel why', 'aria-labelledby': 'r-why-h' },
        h('h2', { id: 'r-why-h', text: 'Why' }),
        h('div', { id: 'r-relevance' }),
        h('div', { id: 'r-legs', class: 'legs' }),
        h('div', { id: 'r-cf' }),
        h('div', { id: 'r-trace' }))));
  loadSettings(q);
}

function weightControl(leg, v) {
  const name = leg[0].toUpperCase() + leg.slice(1);
  const range = h('input', { type: 'range', id: 'r-w-' + leg, min: 0, max: 5, step: 0.05, value: v ?? '', 'data-leg': leg,
    'aria-describedby': 'err-r-wn-' + leg });
  const num = h('input', { type: 'number', id: 'r-wn-' + leg, min: 0, max: 5, step: 0.05, value: v ?? '', 'data-leg': leg,
    'aria-label': name + ' weight, as a number', 'aria-describedby': 'err-r-wn-' + leg, class: 'weight-num' });
  return h('div', { class: 'weight leg-' + leg },
    h('label', { for: 'r-w-' + leg, text: name + ' weight' }),
    h('div', { class: 'weight-inputs' }, range, num),
    h('span', { id: 'err-r-wn-' + leg, class: 'field-error', role: 'alert' }));
}

async function loadSettings(q) {
  const status = root.querySelector('#r-status');
  try {
    saved = await call('GET', '/v1/settings');
  } catch (e) {
    status.textContent = 'settings: ' + e.message;
    return;
  }
  const w = parseWeights(q.get('weights'));
  for (const leg of LEGS) {
    if (w[leg] === undefined) setWeight(leg, saved[WEIGHT_SETTING[leg]]);
  }
  const set = (id, v) => { const el = root.querySelector(id); if (el.value === '') el.value = v; };
  set('#r-strategy', saved.strategy);
  set('#r-norm', saved.normalization);
  set('#r-k', saved.rrf_k);
  set('#r-floor', saved.min_relevance);
  if (root.querySelector('#r-q').value.trim()) run();
}

function setWeight(leg, v) {
  root.querySelector('#r-w-' + leg).value = v;
  root.querySelector('#r-wn-' + leg).value = v;
}

function resetControls() {
  if (!saved) return;
  for (const leg of LEGS) setWeight(leg, saved[WEIGHT_SETTING[leg]]);
  root.querySelector('#r-strategy').value = saved.strategy;
  root.querySelector('#r-norm').value = saved.normalization;
  root.querySelector('#r-k').value = saved.rrf_k;
  root.querySelector('#r-floor').value = saved.min_relevance;
  run();
}

// num reads a number control: a number when it is one, else the text as
// typed (so the API names what is wrong with it).
function num(id) {
  const el = root.querySelector(id);
  const v = el.value.trim();
  if (v === '') return el.validity?.badInput ? 'not a number' : undefined;
  return Number.isFinite(Number(v)) ? Number(v) : v;
}

function controls() {
  const val = id => root.querySelector(id).value.trim();
  const weights = {};
  for (const leg of LEGS) weights[leg] = num('#r-wn-' + leg);
  return {
    query: val('#r-q'), session: val('#r-session'), project: val('#r-project'), kind: val('#r-kind'), actor: val('#r-actor'),
    limit: num('#r-limit'), weights, strategy: val('#r-strategy'), normalization: val('#r-norm'), k: num('#r-k'),
    min_relevance: num('#r-floor'),
  };
}

const list = s => s.split(',').map(x => x.trim()).filter(Boolean);

async function run() {
  const form = root.querySelector('#r-form');
  const c = controls();
  clearErrors(form);
  root.querySelector('#r-error').textContent = '';
  url.write({ q: c.query, session: c.session, project: c.project, kind: c.kind, actor: c.actor,
    limit: c.limit === 10 ? '' : c.limit, weights: LEGS.map(l => `${l}:${c.weights[l] ?? ''}`).join(','),
    strategy: c.strategy, norm: c.normalization, k: c.k, floor: c.min_relevance });
  if (!c.query) {
    showError(form, { message: 'query is empty: type what to recall' }, {}, 'r-error');
    root.querySelector('#err-r-q').textContent = 'type what to recall';
    return;
  }
  const body = { query: c.query, trace: true };
  if (c.session) body.session = list(c.session);
  if (c.project) body.project = c.project;
  if (c.kind) body.kind = c.kind;
  if (c.actor) body.actor = list(c.actor);
  if (c.limit !== undefined) body.limit = c.limit;
  const weights = Object.fromEntries(Object.entries(c.weights).filter(([, v]) => v !== undefined));
  if (Object.keys(weights).length) body.weights = weights;
  if (c.strategy) body.strategy = c.strategy;
  if (c.k !== undefined) body.k = c.k;
  if (c.min_relevance !== undefined) body.min_relevance = c.min_relevance;
  if (c.normalization) body.settings = { normalization: c.normalization };
  const key = JSON.stringify([c.query, c.session, c.project, c.kind, c.actor, c.limit]);
  if (inflight) inflight.abort();
  inflight = new AbortController();
  const my = ++seq;
  root.querySelector('#r-status').textContent = 'recalling…';
  let out;
  try {
    out = await call('POST', '/v1/recall', { body, signal: inflight.signal });
  } catch (e) {
    if (e.name === 'AbortError' || my !== seq) return;
    root.querySelector('#r-status').textContent = '';
    showError(form, e, control, 'r-error');
    return;
  }
  if (my !== seq) return;
  inflight = null;
  if (shown && shown.key === key) prev = shown;
  else prev = null;
  shown = { key, ranks: new Map(out.results.map(r => [r.id, r.rank])), results: out.results };
  const t = out.trace;
  root.querySelector('#r-status').textContent =
    `${out.results.length} result${out.results.length === 1 ? '' : 's'} · ${t.strategy}` +
    (t.requested_strategy && t.requested_strategy !== t.strategy ? ` (asked for ${t.requested_strategy})` : '') +
    ` · ${fmt(t.timings_ms?.total ?? t.timings_ms?.pipeline, 2)} ms`;
  showResults(out, c);
  showWhy(out, c);
}

function showResults(out, c) {
  const ol = clear(root.querySelector('#r-results'));
  const diff = clear(root.querySelector('#r-diff'));
  const floor = out.trace.relevance?.min_relevance ?? c.min_relevance ?? 0;
  const maxTotal = Math.max(1e-12, ...out.results.map(r => Object.values(r.legs || {}).reduce((a, d) => a + Math.max(0, d.contribution || 0), 0)));
  if (prev) {
    const moved = out.results.filter(r => prev.ranks.get(r.id) !== r.rank).length;
    const dropped = prev.results.filter(r => !shown.ranks.has(r.id));
    diff.append(h('p', { id: 'r-moved', text: moved || dropped.length
      ? `Against the ranking before: ${moved} moved or new, ${dropped.length} dropped.` : 'Against the ranking before: nothing moved.' }));
    if (dropped.length) {
      diff.append(h('ul', { class: 'dropped', 'aria-label': 'dropped' }, dropped.map(r =>
        h('li', { 'data-id': r.id }, h('span', { class: 'move dropped-badge', text: '✕ dropped' }), ` was #${r.rank}: ${snippet(r.content, 80)}`))));
    }
  }
  if (!out.results.length) {
    const rt = out.trace.relevance;
    ol.append(h('li', { class: 'empty', text: rt && rt.below_min
      ? `Nothing at or above the relevance floor ${fmt(floor, 2)} (${rt.below_min} below it).` : 'Nothing found in this scope.' }));
    return;
  }
  for (const r of out.results) {
    const before = prev?.ranks.get(r.id);
    let badge = null;
    if (prev) {
      if (before === undefined) badge = h('span', { class: 'move new', text: 'new', title: 'not in the ranking before' });
      else if (before > r.rank) badge = h('span', { class: 'move up', text: `↑${before - r.rank}`, title: `was #${before}` });
      else if (before < r.rank) badge = h('span', { class: 'move down', text: `↓${r.rank - before}`, title: `was #${before}` });
      else badge = h('span', { class: 'move same', text: '=', title: 'same place' });
    }
    const bar = h('div', { class: 'contrib', role: 'img',
      'aria-label': 'contributions: ' + LEGS.filter(l => r.legs?.[l]).map(l => `${l} ${fmt(r.legs[l].contribution, 4)}`).join(', ') });
    for (const leg of LEGS) {
      const d = r.legs?.[leg];
      if (!d || !(d.contribution > 0)) continue;
      const seg = h('span', { class: 'seg leg-' + leg, title: `${leg}: ${fmt(d.contribution, 4)}` });
      seg.style.width = (100 * d.contribution / maxTotal).toFixed(2) + '%';
      bar.append(seg);
    }
    const rel = h('div', { class: 'relbar', role: 'img', 'aria-label': `relevance ${fmt(r.relevance, 2)}, floor ${fmt(floor, 2)}` });
    const fill = h('span', { class: 'fill' + (r.relevance < floor ? ' low' : '') });
    fill.style.width = (100 * Math.min(1, Math.max(0, r.relevance))).toFixed(1) + '%';
    const mark = h('span', { class: 'floor', title: 'floor ' + fmt(floor, 2) });
    mark.style.left = (100 * Math.min(1, Math.max(0, floor))).toFixed(1) + '%';
    rel.append(fill, mark);
    ol.append(h('li', { class: 'result', 'data-id': r.id, 'data-rank': r.rank },
      h('div', { class: 'rank' }, h('span', { text: '#' + r.rank }), badge),
      h('div', { class: 'body' },
        h('p', { class: 'content', text: r.content }),
        h('p', { class: 'meta', text: [`score ${fmt(r.score, 4)}`, `relevance ${fmt(r.relevance, 2)}`, r.session && `session ${r.session}`,
          r.actor && r.actor, when(r.occurred_at), shortId(r.id)].filter(Boolean).join(' · ') }),
        bar, rel,
        h('table', { class: 'mini' },
          h('thead', {}, h('tr', {}, ['leg', 'rank', 'raw', 'norm.', 'contribution'].map(t => h('th', { scope: 'col', text: t })))),
          h('tbody', {}, LEGS.filter(l => r.legs?.[l]).map(l => h('tr', {},
            h('th', { scope: 'row' }, h('span', { class: 'swatch leg-' + l }), l),
            h('td', { class: 'num', text: r.legs[l].rank || '—' }),
            h('td', { class: 'num', text: raw(r.legs[l].score) }),
            h('td', { class: 'num', text: r.legs[l].normalized === undefined ? '—' : fmt(r.legs[l].normalized, 3) }),
            h('td', { class: 'num', text: fmt(r.legs[l].contribution, 4) }))))),
        r.duplicates?.length ? h('p', { class: 'meta', text: `stands for ${r.duplicates.length} duplicate(s): ${r.duplicates.map(shortId).join(', ')}` }) : null)));
  }
}

function snippet(t, n) {
  return t.length > n ? t.slice(0, n - 1) + '…' : t;
}

function showWhy(out, c) {
  const t = out.trace;
  const byId = new Map(out.results.map(r => [r.id, r]));
  // Relevance.
  const rt = t.relevance;
  const relBox = clear(root.querySelector('#r-relevance'));
  if (rt) {
    const ev = rt.evidence || {};
    relBox.append(h('h3', { text: 'Relevance' }), h('dl', { class: 'fields compact', id: 'r-rel' },
      dd('answerable (estimate)', fmt(rt.answerable, 3)), dd('basis', rt.basis),
      dd('floor (min_relevance)', fmt(rt.min_relevance, 2)), dd('below the floor', rt.below_min),
      rt.autocut ? dd('autocut', `${rt.autocut} (dropped ${rt.autocut_dropped || 0})`) : null,
      dd('importance margin', fmt(rt.margin, 2)),
      dd('evidence', `${ev.terms} terms; lexical best ${fmt(ev.lexical_best, 2)}; coverage ${fmt(ev.coverage, 2)}; ` +
        `dense best ${fmt(ev.dense_best, 3)}; ${ev.memories} memories` + (ev.model ? `; ${ev.model}` : ''))));
  }
  // Each leg's own list.
  const legsBox = clear(root.querySelector('#r-legs'));
  legsBox.append(h('h3', { text: 'Each leg alone' }));
  for (const leg of LEGS) {
    const hits = t.legs?.[leg];
    if (!hits) {
      if (t.skipped?.[leg]) legsBox.append(h('p', { class: 'skipped', 'data-leg': leg, text: `${leg}: not run (${t.skipped[leg]})` }));
      continue;
    }
    legsBox.append(h('div', { class: 'leg-list', 'data-leg': leg },
      h('h4', {}, h('span', { class: 'swatch leg-' + leg }), `${leg} · weight ${fmt(t.weights?.[leg], 2)} · ${hits.length} candidates`),
      h('div', { class: 'scroll short', tabindex: 0, role: 'region', 'aria-label': leg + ' leg' },
        h('table', { class: 'mini' },
          h('thead', {}, h('tr', {}, ['rank', 'memory', 'raw', 'norm.', 'fused'].map(x => h('th', { scope: 'col', text: x })))),
          h('tbody', {}, hits.map(hit => {
            const r = byId.get(hit.id);
            const d = r?.legs?.[leg];
            return h('tr', { class: r ? 'in-results' : '' },
              h('td', { class: 'num', text: hit.rank }),
              h('td', { text: r ? snippet(r.content, 48) : shortId(hit.id), title: hit.id }),
              h('td', { class: 'num', text: raw(hit.score) }),
              h('td', { class: 'num', text: d?.normalized === undefined ? '—' : fmt(d.normalized, 3) }),
              h('td', { class: 'num', text: r ? '#' + r.rank : '' }));
          }))))));
  }
  // Counterfactual ranks.
  const cf = clear(root.querySelector('#r-cf'));
  const strategies = [...new Set(out.results.flatMap(r => Object.keys(r.counterfactual || {})))];
  if (strategies.length) {
    cf.append(h('h3', { text: 'Under the other strategies' }),
      h('div', { class: 'scroll', tabindex: 0, role: 'region', 'aria-label': 'ranks under other strategies' },
        h('table', { class: 'mini', id: 'r-cf-table' },
          h('thead', {}, h('tr', {}, h('th', { scope: 'col', text: t.strategy }), strategies.map(s => h('th', { scope: 'col', text: s })))),
          h('tbody', {}, out.results.map(r => h('tr', {},
            h('th', { scope: 'row', text: '#' + r.rank, title: r.content }),
            strategies.map(s => {
              const k = r.counterfactual?.[s];
              return h('td', { class: 'num' + (k && k !== r.rank ? (k > r.rank ? ' worse' : ' better') : ''), text: k ? '#' + k : '—' });
            })))))));
  }
  // The rest of the trace.
  const tr = clear(root.querySelector('#r-trace'));
  tr.append(h('h3', { text: 'Trace' }), h('dl', { class: 'fields compact' },
    dd('strategy', t.strategy + (t.switches?.length ? ` (switches: ${t.switches.join(', ')})` : '')),
    dd('normalization', t.normalization || '—'), dd('missing leg', t.missing_leg), dd('importance', t.importance_mode),
    dd('weights in force', LEGS.map(l => `${l} ${fmt(t.weights?.[l], 2)}`).join(', ')),
    dd('terms', (t.terms || []).join(' ') + (t.lexical_operator ? ` (${t.lexical_operator})` : '')),
    dd('candidates', `${t.candidates} (each leg fetched ${t.fetch})`),
    t.dense_search ? dd('dense search', t.dense_search) : null,
    t.lexical_search ? dd('lexical search', t.lexical_search) : null,
    Object.keys(t.skipped || {}).length ? dd('skipped', Object.entries(t.skipped).map(([k, v]) => `${k}: ${v}`).join('; ')) : null,
    dd('timings (ms)', Object.entries(t.timings_ms || {}).map(([k, v]) => `${k} ${fmt(v, 2)}`).join(', '))));
}

function dd(k, v) {
  return [h('dt', { text: k }), h('dd', { text: v ?? '—' })];
}

async function saveSettings() {
  const form = root.querySelector('#r-form');
  clearErrors(form);
  root.querySelector('#r-error').textContent = '';
  const c = controls();
  const body = {};
  for (const leg of LEGS) if (c.weights[leg] !== undefined) body[WEIGHT_SETTING[leg]] = c.weights[leg];
  if (c.strategy) body.strategy = c.strategy;
  if (c.normalization) body.normalization = c.normalization;
  if (c.k !== undefined) body.rrf_k = c.k;
  if (c.min_relevance !== undefined) body.min_relevance = c.min_relevance;
  const status = root.querySelector('#r-status');
  try {
    await call('PATCH', '/v1/settings', { body });
    saved = await call('GET', '/v1/settings');
  } catch (e) {
    showError(form, e, control, 'r-error');
    return;
  }
  status.textContent = 'Saved as the profile\'s settings: ' + Object.keys(body).map(k => `${k} ${saved[k]}`).join(', ') + '.';
}
