// Charts of the reattempt report, drawn as inline SVG.

import {s, h} from './dom.js';

/** The network caps the report is read against. */
export const CAPS = {visaReattempts30d: 15, mastercardDeclines24h: 10, mastercardDeclines30d: 35};

/** The decline classes in the order they are drawn. */
export const CLASS_ORDER = ['never', 'fix_data', 'authenticate', 'funds', 'issuer_transient', 'generic'];

let chartSeq = 0;

function titled(svg, title, desc) {
  const id = `chart-${++chartSeq}`;
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-labelledby', `${id}-t ${id}-d`);
  svg.prepend(s('title', {id: `${id}-t`}, title), s('desc', {id: `${id}-d`}, desc));
  return svg;
}

/** scale picks an axis for counts up to v: a whole step of 1, 2 or 5 × 10^n and about `ticks` ticks. */
function scale(v, ticks) {
  const raw = Math.max(v, 1) / ticks;
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  let step = p;
  for (const m of [1, 2, 5, 10]) {
    if (m * p >= raw) { step = m * p; break; }
  }
  step = Math.max(1, step);
  return {max: step * Math.max(1, Math.ceil(v / step)), step};
}

/**
 * capChart draws one bar per card: its largest count in a rolling window
 * against the cap of its network, with the cap marked on each row. A card
 * with a violation, or over its cap, is red; one at 80 % of its cap or more
 * is amber. rows: [{label, value, cap, rule, violation}].
 */
export function capChart(rows) {
  const labelW = 250, right = 84, rowH = 24, top = 28, width = 760;
  const plotW = width - labelW - right;
  const axis = scale(Math.max(1, ...rows.map((r) => Math.max(r.value || 0, r.cap * 1.15))), 5);
  const x = (v) => labelW + (v / axis.max) * plotW;
  const height = top + rows.length * rowH + 8;
  const svg = s('svg', {class: 'chart', viewBox: `0 0 ${width} ${height}`, width: '100%', preserveAspectRatio: 'xMinYMin meet'});
  for (let v = 0; v <= axis.max; v += axis.step) {
    svg.append(
      s('line', {class: 'grid-line', x1: x(v), x2: x(v), y1: top - 6, y2: height - 8}),
      s('text', {class: 'axis-label', x: x(v), y: top - 12, 'text-anchor': 'middle'}, String(v)));
  }
  rows.forEach((r, i) => {
    const y = top + i * rowH;
    const value = Math.max(0, r.value || 0);
    const level = r.violation || value > r.cap ? 'bad' : value >= r.cap * 0.8 ? 'near' : 'ok';
    const g = s('g', {class: `cap-row cap-${level}`});
    g.append(
      s('text', {class: 'row-label', x: labelW - 10, y: y + rowH / 2 + 4, 'text-anchor': 'end'}, r.label),
      s('rect', {class: 'bar-track', x: labelW, y: y + 4, width: plotW, height: rowH - 8, rx: 2}),
      s('rect', {class: 'bar', x: labelW, y: y + 4, width: Math.max(value > 0 ? 2 : 0, x(value) - labelW), height: rowH - 8, rx: 2},
        s('title', null, `${r.label}: ${value} (${r.rule}, cap ${r.cap})`)),
      s('line', {class: 'cap-line', x1: x(r.cap), x2: x(r.cap), y1: y + 1, y2: y + rowH - 1}),
      s('text', {class: 'row-value', x: width - right + 8, y: y + rowH / 2 + 4},
        `${value} / ${r.cap}${level === 'bad' ? ' !' : ''}`));
    svg.append(g);
  });
  return titled(svg, 'Largest count in a rolling window per card, against its network cap',
    rows.map((r) => `${r.label}: ${r.value} of ${r.cap} (${r.rule})${r.violation ? ', violation' : ''}`).join('; '));
}

/**
 * classChart draws declines by class as horizontal bars, one row per class with its
 * name on the left, so that no two names can overlap. totals: {class: n}.
 */
export function classChart(totals) {
  const keys = CLASS_ORDER.filter((k) => k in totals).concat(Object.keys(totals).filter((k) => !CLASS_ORDER.includes(k)).sort());
  const labelW = 128, right = 44, rowH = 26, top = 24, width = 370;
  const plotW = width - labelW - right;
  const axis = scale(Math.max(1, ...keys.map((k) => totals[k] || 0)), 4);
  const x = (v) => labelW + (v / axis.max) * plotW;
  const height = top + Math.max(1, keys.length) * rowH + 8;
  const svg = s('svg', {class: 'chart', viewBox: `0 0 ${width} ${height}`, width: '100%', preserveAspectRatio: 'xMinYMin meet'});
  for (let v = 0; v <= axis.max; v += axis.step) {
    svg.append(
      s('line', {class: 'grid-line', x1: x(v), x2: x(v), y1: top - 6, y2: height - 8}),
      s('text', {class: 'axis-label', x: x(v), y: top - 10, 'text-anchor': 'middle'}, String(Math.round(v))));
  }
  keys.forEach((k, i) => {
    const v = totals[k] || 0;
    const y = top + i * rowH;
    svg.append(
      s('text', {class: 'row-label class-label', x: labelW - 8, y: y + rowH / 2 + 4, 'text-anchor': 'end'}, k.replace(/_/g, ' ')),
      s('rect', {class: `bar class-fill-${/^[a-z_]+$/.test(k) ? k : 'other'}`, x: labelW, y: y + 4,
        width: Math.max(v > 0 ? 2 : 0, x(v) - labelW), height: rowH - 8, rx: 2},
      s('title', null, `${k}: ${v}`)),
      s('text', {class: 'bar-value', x: x(v) + 6, y: y + rowH / 2 + 4}, String(v)));
  });
  if (!keys.length) {
    svg.append(s('text', {class: 'axis-label', x: width / 2, y: top + rowH / 2, 'text-anchor': 'middle'}, 'no declines'));
  }
  return titled(svg, 'Declines by class, all cards', keys.map((k) => `${k}: ${totals[k]}`).join('; ') || 'no declines');
}

/** legend explains the colours of capChart. */
export function capLegend() {
  return h('p', {class: 'legend small'},
    h('span', {class: 'legend-item'}, h('span', {class: 'swatch swatch-ok', 'aria-hidden': 'true'}), 'under 80 % of the cap'),
    h('span', {class: 'legend-item'}, h('span', {class: 'swatch swatch-near', 'aria-hidden': 'true'}), 'at 80 % or more'),
    h('span', {class: 'legend-item'}, h('span', {class: 'swatch swatch-bad', 'aria-hidden': 'true'}), 'violation'),
    h('span', {class: 'legend-item'}, h('span', {class: 'swatch swatch-cap', 'aria-hidden': 'true'}), 'network cap'));
}
