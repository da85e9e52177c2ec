/*
 * Bar charts as SVG that scale to the screen (viewBox), each named for screen readers.
 */
import { append, clip, fmtNum, h, s } from './dom.js';

/** Horizontal bars with the number beside each: rows of [label, value, note, shown instead of the value]. */
export function barChart(id, rows, max, label) {
  if (rows.length === 0) return h('p', { class: 'muted', id: id, text: 'Nothing yet.' });
  var top =
    max ||
    rows.reduce(function (m, r) {
      return Math.max(m, r[1]);
    }, 0) ||
    1;
  var LEFT = 190,
    W = 420,
    ROW = 22;
  var width = LEFT + W + 320;
  var height = rows.length * ROW + 6;
  var svg = s('svg', {
    id: id,
    class: 'chart',
    width: width,
    height: height,
    viewBox: '0 0 ' + width + ' ' + height,
    role: 'img',
    'aria-label': label || id.replace(/-/g, ' '),
  });
  rows.forEach(function (r, i) {
    var y = i * ROW + 3;
    append(svg, s('text', { x: 4, y: y + 13, text: clip(r[0], 28) }));
    append(
      svg,
      s('rect', {
        class: 'chart-bar',
        x: LEFT,
        y: y,
        height: ROW - 6,
        width: Math.max(1, (r[1] / top) * W),
        'data-value': r[1],
      }),
    );
    append(
      svg,
      s('text', {
        x: LEFT + Math.max(1, (r[1] / top) * W) + 6,
        y: y + 13,
        text: clip(
          (r[3] !== undefined ? r[3] : fmtNum(r[1]) + (max === 100 ? ' %' : '')) + (r[2] ? '  (' + r[2] + ')' : ''),
          48,
        ),
      }),
    );
  });
  return svg;
}
