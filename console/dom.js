/*
 * DOM helpers of the console: every value reaches the page as text (textContent or an SVG text
 * node, through visibleText), never as markup. Formatters for numbers, durations and times.
 */
import { visibleText } from './text.js';

const SVG = 'http://www.w3.org/2000/svg';

export function h(tag, attrs) {
  var el = document.createElement(tag);
  setAttrs(el, attrs);
  for (var i = 2; i < arguments.length; i++) append(el, arguments[i]);
  return el;
}

export function s(tag, attrs) {
  var el = document.createElementNS(SVG, tag);
  setAttrs(el, attrs);
  for (var i = 2; i < arguments.length; i++) append(el, arguments[i]);
  return el;
}

function setAttrs(el, attrs) {
  if (!attrs) return;
  Object.keys(attrs).forEach(function (k) {
    var v = attrs[k];
    if (v === null || v === undefined || v === false) return;
    if (k === 'onclick' || k === 'onsubmit' || k === 'onchange' || k === 'onkeydown' || k === 'oninput')
      el.addEventListener(k.slice(2), v);
    else if (k === 'text') el.textContent = visibleText(v);
    else if (k === 'aria-label' || k === 'title') el.setAttribute(k, visibleText(v));
    else el.setAttribute(k, String(v));
  });
}

export function append(el, child) {
  if (child === null || child === undefined || child === false) return;
  if (Array.isArray(child))
    return child.forEach(function (c) {
      append(el, c);
    });
  el.appendChild(typeof child === 'object' ? child : document.createTextNode(visibleText(child)));
}

/** Replaces the page's main content. */
export function show() {
  var app = document.getElementById('app');
  app.textContent = '';
  for (var i = 0; i < arguments.length; i++) append(app, arguments[i]);
}

export function fmtNum(n) {
  return n === null || n === undefined ? '–' : Number(n).toLocaleString('en-US');
}

export function fmtMs(ms) {
  if (ms === null || ms === undefined) return '–';
  if (ms < 1000) return ms + ' ms';
  if (ms < 120000) return (ms / 1000).toFixed(1) + ' s';
  return (ms / 60000).toFixed(1) + ' min';
}

export function fmtTime(iso) {
  return iso ? iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '–';
}

/** The CSS class of a status: a step the API calls in_progress is drawn in the running colour. */
export function statusClass(status) {
  return status === 'in_progress' ? 'running' : String(status).replace(/[^a-z_-]/gi, '');
}

export function badge(status) {
  return h('span', { class: 'badge ' + statusClass(status), text: status });
}

/** A duration in seconds as an operator reads it: 45 s, 12 min, 3.5 h, 2.1 d. */
export function fmtAge(seconds) {
  if (seconds === null || seconds === undefined) return '–';
  if (seconds < 120) return Math.round(seconds) + ' s';
  if (seconds < 7200) return Math.round(seconds / 60) + ' min';
  if (seconds < 172800) return (seconds / 3600).toFixed(1) + ' h';
  return (seconds / 86400).toFixed(1) + ' d';
}

export function link(href, text) {
  return h('a', { href: href, text: text });
}

export function enc(x) {
  return encodeURIComponent(x);
}

export function card(label, value) {
  return h(
    'div',
    { class: 'card' },
    h('div', { class: 'value', text: value }),
    h('div', { class: 'label', text: label }),
  );
}

export function errorBox(err) {
  return h('p', { class: 'error', role: 'alert', text: err && err.message ? err.message : String(err) });
}

export function clip(text, n) {
  text = String(text);
  return text.length > n ? text.slice(0, n - 1) + '…' : text;
}

export function toQuery(q) {
  return Object.keys(q)
    .filter(function (k) {
      return q[k] !== undefined && q[k] !== '';
    })
    .map(function (k) {
      return enc(k) + '=' + enc(q[k]);
    })
    .join('&');
}

export function table(id, head, rows, empty) {
  if (rows.length === 0) return h('p', { class: 'muted', id: id, text: empty });
  return wrapTable(
    'table',
    { id: id },
    h(
      'thead',
      null,
      h(
        'tr',
        null,
        head.map(function (t) {
          return h('th', { text: t });
        }),
      ),
    ),
    h('tbody', null, rows),
  );
}

/** A table in a box of its own that scrolls sideways when the screen is narrower than the table. */
export function wrapTable() {
  return h('div', { class: 'table-wrap' }, h.apply(null, arguments));
}
