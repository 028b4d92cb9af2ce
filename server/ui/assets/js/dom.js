// Building the page from nodes, never from markup: every text a memory or the server
// gives is set as text, never parsed as markup.

// h creates an element: attrs sets properties or attributes (class, text,
// on* listeners, dataset via data-*, aria-* and for), children are nodes,
// strings or arrays of them (null and false are skipped).
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

const SVG = 'http://www.w3.org/2000/svg';

// s creates an SVG element.
export function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'text') el.textContent = String(v);
    else if (k === 'class') el.setAttribute('class', v);
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function setAttrs(el, attrs) {
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'text') el.textContent = String(v);
    else if (k === 'class') el.className = v;
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'for') el.htmlFor = v;
    else if (k.startsWith('data-') || k.startsWith('aria-') || k === 'role' || k === 'scope' || k === 'list') el.setAttribute(k, v === true ? '' : String(v));
    else if (k in el) el[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
}

export function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

// field builds a labelled control with an error slot beside it:
// <div class="field"><label for=id>label</label>control<span id=err-id></span></div>.
export function field(label, control, help) {
  const id = control.id;
  const err = h('span', { id: 'err-' + id, class: 'field-error', role: 'alert' });
  const described = ['err-' + id];
  let helpEl = null;
  if (help) {
    helpEl = h('span', { id: 'help-' + id, class: 'help', text: help });
    described.push('help-' + id);
  }
  control.setAttribute('aria-describedby', described.join(' '));
  return h('div', { class: 'field' }, h('label', { for: id, text: label }), control, helpEl, err);
}

export function input(id, value = '', attrs = {}) {
  return h('input', { id, name: id, value: value ?? '', ...attrs });
}

export function select(id, options, value, attrs = {}) {
  const el = h('select', { id, name: id, ...attrs },
    options.map(o => {
      const [v, label] = Array.isArray(o) ? o : [o, o];
      return h('option', { value: v, text: label });
    }));
  el.value = value ?? '';
  return el;
}

// debounce returns fn delayed until calls stop for ms.
export function debounce(fn, ms) {
  let t = 0;
  return (...args) => {
    clearTimeout(t);
    t = setTimeout(() => fn(...args), ms);
  };
}

export function fmt(x, digits = 3) {
  if (x === null || x === undefined || Number.isNaN(x)) return '—';
  if (typeof x !== 'number') return String(x);
  return x.toFixed(digits);
}

export function shortId(id) {
  return id.length > 14 ? id.slice(0, 8) + '…' + id.slice(-4) : id;
}

export function when(t) {
  if (!t || t.startsWith('0001-01-01')) return '';
  return t.replace('T', ' ').replace(/\.\d+/, '').replace('Z', ' UTC');
}

// raw formats a leg's raw score, whose scale is the leg's own: BM25 may
// be tiny in a small profile, recency is Unix seconds.
export function raw(x) {
  if (typeof x !== 'number' || Number.isNaN(x)) return '—';
  const a = Math.abs(x);
  if (a >= 1e6) return x.toFixed(0);
  if (a > 0 && a < 0.01) return x.toExponential(2);
  return x.toFixed(3);
}
