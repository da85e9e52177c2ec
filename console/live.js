/*
 * Pages of running things update by themselves: a watched page asks its server every few seconds
 * whether its data changed (If-None-Match with the last ETag; the server answers 304 when not, and
 * shares one computation among all open consoles), and redraws only when it did. The header shows
 * "live" or "paused"; the operator pauses and resumes it, and a hidden tab asks nothing.
 */
import { api, etagOf } from './api.js';
import { h } from './dom.js';

export var LIVE_INTERVAL_MS = 2000;

var watching = null; // { paths, onChange, timer }
var paused = sessionStorage.getItem('plan-ledger-live') === 'paused';
var button = null;

/** The header's live / paused switch (hidden while the page watches nothing). */
export function liveSwitch() {
  button = h('button', {
    id: 'live-toggle',
    type: 'button',
    class: 'live',
    onclick: function () {
      paused = !paused;
      sessionStorage.setItem('plan-ledger-live', paused ? 'paused' : 'live');
      draw();
      if (!paused) {
        tick();
        headerTick();
      }
    },
  });
  draw();
  return button;
}

function draw() {
  if (!button) return;
  button.hidden = !watching;
  button.className = 'live ' + (paused ? 'off' : 'on');
  button.textContent = paused ? 'paused' : 'live';
  button.setAttribute('aria-pressed', String(!paused));
  button.setAttribute('title', paused ? 'updates paused: click to resume' : 'updating by itself: click to pause');
}

/**
 * Watches `paths` (GET routes the page was drawn from) until the route changes or stop() is
 * called; `onChange(bodies)` gets every path's newest body when any of them changed.
 */
export function watch(paths, onChange) {
  stop();
  watching = { paths: paths, onChange: onChange, timer: null };
  draw();
  schedule();
}

export function stop() {
  if (watching && watching.timer) clearTimeout(watching.timer);
  watching = null;
  draw();
}

function schedule() {
  var w = watching;
  if (!w) return;
  w.timer = setTimeout(function () {
    if (watching === w) tick();
  }, LIVE_INTERVAL_MS);
}

function tick() {
  var w = watching;
  if (!w) return;
  if (w.timer) clearTimeout(w.timer);
  if (paused || document.hidden || typing()) return schedule();
  Promise.all(
    w.paths.map(function (p) {
      return api(p, { ifNoneMatch: etagOf(p) });
    }),
  ).then(
    function (answers) {
      if (watching !== w) return;
      var changed = answers.some(function (a) {
        return !(a && a.notModified);
      });
      if (!changed) return schedule();
      // a path that did not change is asked again in full (rare: only when another did change)
      return Promise.all(
        answers.map(function (a, i) {
          return a && a.notModified ? api(w.paths[i]) : a;
        }),
      ).then(function (bodies) {
        if (watching !== w) return;
        w.onChange(bodies);
        if (watching === w) schedule();
      });
    },
    function () {
      if (watching === w) schedule();
    },
  );
}

var header = null; // { path, onChange, timer }

/**
 * Watches `path` for the header (the pending approvals' count) on every page, until
 * stopHeader(): `onChange(body)` at once and whenever the answer changes. It asks as the page
 * does (If-None-Match, every LIVE_INTERVAL_MS), nothing while paused or in a hidden tab; a form
 * being typed in does not hold it back, since it redraws only the header.
 */
export function watchHeader(path, onChange) {
  stopHeader();
  header = { path: path, onChange: onChange, timer: null };
  headerTick();
}

export function stopHeader() {
  if (header && header.timer) clearTimeout(header.timer);
  header = null;
}

function headerTick() {
  var w = header;
  if (!w) return;
  if (w.timer) clearTimeout(w.timer);
  var again = function () {
    if (header === w)
      w.timer = setTimeout(function () {
        if (header === w) headerTick();
      }, LIVE_INTERVAL_MS);
  };
  if (paused || document.hidden) return again();
  api(w.path, { ifNoneMatch: etagOf(w.path) }).then(
    function (a) {
      if (header === w && a && !a.notModified) w.onChange(a);
      again();
    },
    function () {
      again();
    },
  );
}

/** An operator typing in a form of the page: a redraw now would take the text away. */
function typing() {
  var el = document.activeElement;
  return !!el && /^(INPUT|SELECT|TEXTAREA)$/.test(el.tagName) && !!el.closest('#app');
}

document.addEventListener('visibilitychange', function () {
  if (!document.hidden && watching) tick();
  if (!document.hidden && header) headerTick();
});
