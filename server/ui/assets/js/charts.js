// Charts drawn as inline SVG: horizontal bars with interval whiskers,
// grouped bars, a forest plot of differences and a line chart. Colours
// come from the stylesheet (classes c0…c7), so no style is inline.
import { s } from './dom.js';

const W = 640;
const LEFT = 170;
const RIGHT = 20;
const ROW = 22;

function scale(lo, hi) {
  return v => LEFT + (W - LEFT - RIGHT) * (v - lo) / ((hi - lo) || 1);
}

function ticksAt(lo, hi, n = 5) {
  const out = [];
  for (let i = 0; i <= n; i++) out.push(lo + (hi - lo) * i / n);
  return out;
}

function gridAndTicks(svg, x, lo, hi, top, bottom, digits = 1) {
  for (const t of ticksAt(lo, hi)) {
    svg.append(s('line', { class: 'grid', x1: x(t), x2: x(t), y1: top, y2: bottom }));
    svg.append(s('text', { class: 'tick', x: x(t), y: bottom + 14, 'text-anchor': 'middle', text: t.toFixed(digits) }));
  }
}

function label(svg, y, text) {
  const shown = text.length > 24 ? text.slice(0, 23) + '…' : text;
  const t = s('text', { class: 'label', x: LEFT - 8, y: y + 4, 'text-anchor': 'end', text: shown });
  t.append(s('title', { text }));
  svg.append(t);
}

// bars draws one bar per item {name, value, ci: [lo, hi]?} on [0, max].
export function bars(title, items, { max = 1 } = {}) {
  const top = 28;
  const height = top + items.length * ROW + 26;
  const svg = s('svg', { viewBox: `0 0 ${W} ${height}`, role: 'img', 'aria-label': title, class: 'chart' });
  svg.append(s('title', { text: title }), s('text', { class: 'title', x: 8, y: 16, text: title }));
  const x = scale(0, max);
  gridAndTicks(svg, x, 0, max, top - 4, top + items.length * ROW);
  items.forEach((it, i) => {
    const y = top + i * ROW;
    label(svg, y + ROW / 2 - 2, it.name);
    const v = Number.isFinite(it.value) ? it.value : 0;
    svg.append(s('rect', { class: 'bar c' + (i % 8), x: LEFT, y: y + 3, width: Math.max(0, x(v) - LEFT), height: ROW - 8 },
      s('title', { text: `${it.name}: ${v.toFixed(3)}` + (it.ci ? ` [${it.ci[0].toFixed(3)}, ${it.ci[1].toFixed(3)}]` : '') })));
    if (it.ci) whisker(svg, x(it.ci[0]), x(it.ci[1]), y + ROW / 2 - 1);
    svg.append(s('text', { class: 'value', x: Math.min(x(v) + 4, W - 40), y: y + ROW / 2 + 3, text: v.toFixed(3) }));
  });
  return svg;
}

function whisker(svg, x0, x1, y) {
  svg.append(s('line', { class: 'whisker', x1: x0, x2: x1, y1: y, y2: y }),
    s('line', { class: 'whisker', x1: x0, x2: x0, y1: y - 4, y2: y + 4 }),
    s('line', { class: 'whisker', x1: x1, x2: x1, y1: y - 4, y2: y + 4 }));
}

// grouped draws, for each group {name, n, values: [{name, value, ci?}]},
// one bar per series, with a legend of the series.
export function grouped(title, groups, series, { max = 1 } = {}) {
  const top = 28 + 18;
  const sub = 12;
  const gh = series.length * sub + 10;
  const height = top + groups.length * gh + 26;
  const svg = s('svg', { viewBox: `0 0 ${W} ${height}`, role: 'img', 'aria-label': title, class: 'chart' });
  svg.append(s('title', { text: title }), s('text', { class: 'title', x: 8, y: 16, text: title }));
  let lx = 8;
  series.forEach((name, i) => {
    svg.append(s('rect', { class: 'bar c' + (i % 8), x: lx, y: 26, width: 10, height: 10 }),
      s('text', { class: 'legend', x: lx + 14, y: 35, text: name }));
    lx += 24 + name.length * 6.5;
  });
  const x = scale(0, max);
  gridAndTicks(svg, x, 0, max, top - 4, top + groups.length * gh);
  groups.forEach((g, gi) => {
    const y = top + gi * gh;
    label(svg, y + gh / 2 - 4, g.n !== undefined ? `${g.name} (${g.n})` : g.name);
    g.values.forEach((v, i) => {
      const val = Number.isFinite(v.value) ? v.value : 0;
      svg.append(s('rect', { class: 'bar c' + (i % 8), x: LEFT, y: y + 3 + i * sub, width: Math.max(0, x(val) - LEFT), height: sub - 2 },
        s('title', { text: `${g.name}, ${v.name}: ${val.toFixed(3)}` + (v.ci ? ` [${v.ci[0].toFixed(3)}, ${v.ci[1].toFixed(3)}]` : '') })));
      if (v.ci) whisker(svg, x(v.ci[0]), x(v.ci[1]), y + 3 + i * sub + (sub - 2) / 2);
    });
  });
  return svg;
}

// forest draws each difference {name, delta, lo, hi, p} as a point with
// its interval around a line at 0.
export function forest(title, items) {
  const top = 28;
  const height = top + items.length * ROW + 26;
  const ext = Math.max(0.01, ...items.flatMap(it => [Math.abs(it.lo), Math.abs(it.hi), Math.abs(it.delta)]));
  const lim = Math.ceil(ext * 100) / 100;
  const svg = s('svg', { viewBox: `0 0 ${W} ${height}`, role: 'img', 'aria-label': title, class: 'chart' });
  svg.append(s('title', { text: title }), s('text', { class: 'title', x: 8, y: 16, text: title }));
  const x = scale(-lim, lim);
  gridAndTicks(svg, x, -lim, lim, top - 4, top + items.length * ROW, 2);
  svg.append(s('line', { class: 'zero', x1: x(0), x2: x(0), y1: top - 4, y2: top + items.length * ROW }));
  items.forEach((it, i) => {
    const y = top + i * ROW + ROW / 2;
    label(svg, y - 2, it.name);
    const sig = it.lo > 0 || it.hi < 0;
    whisker(svg, x(it.lo), x(it.hi), y);
    svg.append(s('circle', { class: 'point' + (sig ? (it.delta > 0 ? ' better' : ' worse') : ''), cx: x(it.delta), cy: y, r: 4 },
      s('title', { text: `${it.name}: ${it.delta >= 0 ? '+' : ''}${it.delta.toFixed(3)} [${it.lo.toFixed(3)}, ${it.hi.toFixed(3)}], p ${it.p}` })));
  });
  return svg;
}

// lines draws series {name, points: [{x: label, y}]} over shared x labels.
export function lines(title, xs, series, { max = 1 } = {}) {
  const H = 220;
  const top = 40;
  const bottom = H - 30;
  const left = 48;
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': title, class: 'chart' });
  svg.append(s('title', { text: title }), s('text', { class: 'title', x: 8, y: 16, text: title }));
  const lo = Math.max(0, Math.floor(Math.min(...series.flatMap(se => se.points.map(p => p.y))) * 20) / 20 - 0.05);
  const hi = Math.min(max, Math.ceil(Math.max(...series.flatMap(se => se.points.map(p => p.y))) * 20) / 20 + 0.05);
  const X = i => left + (W - left - RIGHT) * (xs.length > 1 ? i / (xs.length - 1) : 0.5);
  const Y = v => bottom - (bottom - top) * (v - lo) / ((hi - lo) || 1);
  for (const t of ticksAt(lo, hi, 4)) {
    svg.append(s('line', { class: 'grid', x1: left, x2: W - RIGHT, y1: Y(t), y2: Y(t) }),
      s('text', { class: 'tick', x: left - 6, y: Y(t) + 4, 'text-anchor': 'end', text: t.toFixed(2) }));
  }
  xs.forEach((v, i) => svg.append(s('text', { class: 'tick', x: X(i), y: bottom + 16, 'text-anchor': 'middle', text: v })));
  let lx = left;
  series.forEach((se, si) => {
    const pts = se.points.map(p => [X(xs.indexOf(p.x)), Y(p.y)]);
    svg.append(s('polyline', { class: 'line c' + (si % 8), points: pts.map(p => p.join(',')).join(' ') }));
    se.points.forEach((p, i) => svg.append(s('circle', { class: 'dot c' + (si % 8), cx: pts[i][0], cy: pts[i][1], r: 3 },
      s('title', { text: `${se.name} at ${p.x}: ${p.y.toFixed(3)}` }))));
    svg.append(s('rect', { class: 'bar c' + (si % 8), x: lx, y: 24, width: 10, height: 10 }),
      s('text', { class: 'legend', x: lx + 14, y: 33, text: se.name }));
    lx += 24 + se.name.length * 6.5;
  });
  return svg;
}
