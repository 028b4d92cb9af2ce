// Eval: the results of `mnemo eval --json`, loaded from a file or run by
// the server on one of its dataset folders (POST /v1/eval, for an admin key
// or single-user mode, when the server was started with --eval-datasets):
// per-configuration and per-category tables with their intervals, the
// differences from the baseline, and charts.
import { call } from './api.js';
import { h, clear, field, input, select, fmt } from './dom.js';
import { clearErrors, showError } from './forms.js';
import { bars, grouped, forest, lines } from './charts.js';
import * as url from './url.js';

const RUN_FIELDS = { dataset: 'ev-dataset', config: 'ev-config', configs: 'ev-config', limit_queries: 'ev-limit',
  exclude_category: 'ev-exclude', baseline: 'ev-baseline' };

let root;
let report = null;

export function render(main) {
  root = main;
  report = null;
  const q = url.read();
  const load = h('form', { id: 'ev-load', class: 'panel', novalidate: true, 'aria-labelledby': 'ev-load-h' },
    h('h2', { id: 'ev-load-h', text: 'Load a report' }),
    h('p', { class: 'help', text: 'A file written by mnemo eval DATASET --json FILE.' }),
    field('Report file', h('input', { id: 'ev-file', type: 'file', accept: '.json,application/json' })));
  load.querySelector('#ev-file').addEventListener('change', readFile);
  const run = h('form', { id: 'ev-run', class: 'panel', novalidate: true, 'aria-labelledby': 'ev-run-h' },
    h('h2', { id: 'ev-run-h', text: 'Run on the server' }),
    h('p', { class: 'help', text: 'Needs an admin key (or single-user mode) and a server started with --eval-datasets DIR.' }),
    h('div', { class: 'grid' },
      field('Dataset', select('ev-dataset', [['', 'loading…']], '')),
      field('Configurations', h('textarea', { id: 'ev-config', rows: 3, value: q.get('config') || 'default\nlexical' }),
        'one a line: a preset (default, lexical, rrf, …) or NAME=SPEC'),
      field('Baseline', input('ev-baseline', q.get('baseline') || '', { placeholder: 'lexical' })),
      field('Queries', input('ev-limit', q.get('limit_queries') || '200', { type: 'number', min: 0 }), 'the first N judged queries; 0: all'),
      field('Also without categories', input('ev-exclude', q.get('exclude') || '', { placeholder: 'adversarial' }))),
    h('div', { class: 'actions' }, h('button', { type: 'submit', id: 'ev-go', text: 'Run eval' })),
    h('p', { id: 'ev-error', class: 'form-error', role: 'alert' }),
    h('p', { id: 'ev-status', class: 'status', role: 'status', 'aria-live': 'polite' }));
  run.addEventListener('submit', ev => { ev.preventDefault(); runEval(); });
  root.append(h('div', { class: 'split even' }, load, run), h('section', { id: 'ev-report', class: 'panel', 'aria-labelledby': 'ev-report-h', hidden: true }));
  datasets(q.get('dataset') || '');
}

async function datasets(want) {
  const sel = root.querySelector('#ev-dataset');
  try {
    const out = await call('GET', '/v1/eval/datasets');
    clear(sel).append(...out.datasets.map(d => h('option', { value: d, text: d })));
    if (!out.datasets.length) sel.append(h('option', { value: '', text: 'no dataset folder' }));
    if (want) sel.value = want;
  } catch (e) {
    clear(sel).append(h('option', { value: '', text: 'unavailable' }));
    root.querySelector('#err-ev-dataset').textContent = e.message;
  }
}

function readFile(ev) {
  const f = ev.target.files[0];
  const err = root.querySelector('#err-ev-file');
  err.textContent = '';
  if (!f) return;
  const rd = new FileReader();
  rd.onload = () => {
    let r;
    try {
      r = JSON.parse(rd.result);
    } catch (e) {
      err.textContent = `${f.name} is not JSON: ${e.message}`;
      return;
    }
    if (!Array.isArray(r?.configs) || !r.configs.length) {
      err.textContent = `${f.name} is not a report of mnemo eval --json: it has no "configs"`;
      return;
    }
    url.write({ file: f.name });
    show(r, `loaded from ${f.name} (a file cannot be linked to: share the file itself)`);
  };
  rd.onerror = () => { err.textContent = `cannot read ${f.name}`; };
  rd.readAsText(f);
}

async function runEval() {
  const form = root.querySelector('#ev-run');
  clearErrors(form);
  root.querySelector('#ev-error').textContent = '';
  const val = id => form.querySelector(id).value.trim();
  const body = { dataset: val('#ev-dataset') };
  body.config = val('#ev-config').split('\n').map(x => x.trim()).filter(Boolean);
  if (val('#ev-baseline')) body.baseline = val('#ev-baseline');
  const lim = val('#ev-limit');
  if (lim !== '') body.limit_queries = Number.isFinite(Number(lim)) ? Number(lim) : lim;
  if (val('#ev-exclude')) body.exclude_category = val('#ev-exclude').split(',').map(x => x.trim()).filter(Boolean);
  url.write({ dataset: body.dataset, config: val('#ev-config'), baseline: body.baseline, limit_queries: lim, exclude: val('#ev-exclude') });
  const status = root.querySelector('#ev-status');
  const go = root.querySelector('#ev-go');
  status.textContent = 'running: the corpus is stored and every query asked under each configuration…';
  go.disabled = true;
  const start = performance.now();
  try {
    const r = await call('POST', '/v1/eval', { body });
    status.textContent = `done in ${((performance.now() - start) / 1000).toFixed(1)} s`;
    show(r, `run on the server on ${body.dataset}`);
  } catch (e) {
    status.textContent = '';
    showError(form, e, RUN_FIELDS, 'ev-error');
  } finally {
    go.disabled = false;
  }
}

function metricsOf(r) {
  const m = r.configs[0].overall;
  return Object.keys(m).filter(k => k !== 'n');
}

function show(r, source) {
  report = r;
  const box = root.querySelector('#ev-report');
  box.hidden = false;
  const metrics = metricsOf(r);
  const q = url.read();
  const metric = metrics.includes(q.get('metric')) ? q.get('metric') : (metrics.find(m => m === 'recall@10') || metrics[0]);
  const pick = select('ev-metric', metrics, metric);
  pick.addEventListener('change', () => draw(pick.value));
  clear(box).append(
    h('h2', { id: 'ev-report-h', text: `${r.dataset}: ${r.queries} queries` }),
    h('p', { class: 'help', text: source }),
    field('Metric for the charts and the category table', pick),
    h('div', { id: 'ev-body' }));
  draw(metric);
}

function ci(obj, metric) {
  const v = obj?.[metric];
  return Array.isArray(v) && v.length === 2 && v.every(Number.isFinite) ? v : null;
}

function cell(v, interval) {
  return h('td', { class: 'num' }, fmt(v, 3), interval ? h('span', { class: 'ci', text: ` [${fmt(interval[0], 3)}, ${fmt(interval[1], 3)}]` }) : null);
}

function draw(metric) {
  const r = report;
  const q = url.read();
  q.set('metric', metric);
  history.replaceState(null, '', location.pathname + '?' + q.toString());
  const body = clear(root.querySelector('#ev-body'));
  const metrics = metricsOf(r);
  const baseline = r.comparisons?.[0]?.baseline || '';
  // Per configuration.
  body.append(h('h3', { text: 'Per configuration' }),
    h('p', { class: 'help', text: 'Mean over the queries, [bootstrap 95% interval] where the report has it.' }),
    h('div', { class: 'scroll', tabindex: 0, role: 'region', 'aria-label': 'per configuration' },
      h('table', { id: 'ev-configs', class: 'data' },
        h('thead', {}, h('tr', {}, h('th', { scope: 'col', text: 'configuration' }), h('th', { scope: 'col', text: 'spec' }),
          metrics.map(m => h('th', { scope: 'col', text: m })), h('th', { scope: 'col', text: 'n' }))),
        h('tbody', {}, r.configs.map(c => h('tr', { class: c.name === baseline ? 'baseline' : '' },
          h('th', { scope: 'row', text: c.name + (c.name === baseline ? ' (baseline)' : '') }),
          h('td', { class: 'spec', text: c.spec || '—' }),
          metrics.map(m => cell(c.overall[m], ci(c.ci, m))),
          h('td', { class: 'num', text: c.overall.n })))))));
  body.append(bars(`${metric} per configuration`, r.configs.map(c => ({ name: c.name, value: c.overall[metric], ci: ci(c.ci, metric) }))));
  // Against the baseline.
  const cmp = (r.comparisons || []).filter(c => c.metric === metric);
  if (r.comparisons?.length) {
    body.append(h('h3', { text: `Against the baseline (${baseline})` }),
      h('p', { class: 'help', text: 'Δ = configuration − baseline, mean per-query difference, [paired bootstrap 95% interval], randomization-test p.' }),
      h('div', { class: 'scroll', tabindex: 0, role: 'region', 'aria-label': 'against the baseline' },
        h('table', { id: 'ev-cmp', class: 'data' },
          h('thead', {}, h('tr', {}, h('th', { scope: 'col', text: 'configuration' }), metrics.map(m => h('th', { scope: 'col', text: 'Δ ' + m })))),
          h('tbody', {}, [...new Set(r.comparisons.map(c => c.config))].map(name => h('tr', {},
            h('th', { scope: 'row', text: name }),
            metrics.map(m => {
              const c = r.comparisons.find(x => x.config === name && x.metric === m);
              if (!c) return h('td', { text: '—' });
              const sig = c.ci_low > 0 || c.ci_high < 0;
              return h('td', { class: 'num' + (sig ? (c.delta > 0 ? ' better' : ' worse') : '') },
                (c.delta >= 0 ? '+' : '') + fmt(c.delta, 3), h('span', { class: 'ci', text: ` [${fmt(c.ci_low, 3)}, ${fmt(c.ci_high, 3)}] p ${fmtP(c.p)}` }));
            })))))));
    if (cmp.length) body.append(forest(`Δ ${metric} against ${baseline}`, cmp.map(c => ({ name: c.config, delta: c.delta, lo: c.ci_low, hi: c.ci_high, p: fmtP(c.p) }))));
  }
  if (r.exclude_categories?.length) {
    body.append(h('h3', { text: `Without ${r.exclude_categories.join(', ')}` }),
      h('div', { class: 'scroll', tabindex: 0, role: 'region', 'aria-label': 'without the excluded categories' },
        h('table', { id: 'ev-excluding', class: 'data' },
          h('thead', {}, h('tr', {}, h('th', { scope: 'col', text: 'configuration' }), metrics.map(m => h('th', { scope: 'col', text: m })), h('th', { scope: 'col', text: 'n' }))),
          h('tbody', {}, r.configs.filter(c => c.overall_excluding).map(c => h('tr', {},
            h('th', { scope: 'row', text: c.name }),
            metrics.map(m => cell(c.overall_excluding[m], ci(c.ci_excluding, m))),
            h('td', { class: 'num', text: c.overall_excluding.n })))))));
  }
  // Per category.
  const cats = [...new Set(r.configs.flatMap(c => Object.keys(c.by_category || {})))].sort();
  if (cats.length) {
    body.append(h('h3', { text: `Per category: ${metric}` }),
      h('div', { class: 'scroll', tabindex: 0, role: 'region', 'aria-label': 'per category' },
        h('table', { id: 'ev-cats', class: 'data' },
          h('thead', {}, h('tr', {}, h('th', { scope: 'col', text: 'category' }), h('th', { scope: 'col', text: 'n' }),
            r.configs.map(c => h('th', { scope: 'col', text: c.name })))),
          h('tbody', {}, cats.map(cat => h('tr', {},
            h('th', { scope: 'row', text: cat }),
            h('td', { class: 'num', text: r.configs[0].by_category?.[cat]?.n ?? '' }),
            r.configs.map(c => cell(c.by_category?.[cat]?.[metric], ci(c.ci_by_category?.[cat], metric)))))))));
    body.append(grouped(`${metric} per category`, cats.map(cat => ({
      name: cat, n: r.configs[0].by_category?.[cat]?.n,
      values: r.configs.map(c => ({ name: c.name, value: c.by_category?.[cat]?.[metric], ci: ci(c.ci_by_category?.[cat], metric) })),
    })), r.configs.map(c => c.name)));
  }
  // Sweeps.
  for (const sw of r.sweeps || []) {
    body.append(h('h3', { text: `Sweep of ${sw.key} (${sw.setting})` }),
      lines(`${metric} as ${sw.key} varies`, sw.values, sw.series.map(se => ({
        name: se.config, points: se.points.map(p => ({ x: p.value, y: p.overall[metric] })),
      }))));
  }
  for (const c of r.configs.filter(c => c.no_answer)) {
    body.append(h('p', { class: 'help', text: `${c.name}: answered ${fmt(c.no_answer.empty, 3)} of ${c.no_answer.n} questions without an answer with nothing.` }));
  }
}

function fmtP(p) {
  if (p < 0.001) return '<0.001';
  return p < 0.01 ? p.toFixed(3) : p.toFixed(2);
}
