/*
 * The plan-ledger console: plain browser JavaScript, no build step, no third-party code.
 * Every value that comes from an event reaches the page through textContent or an SVG text node,
 * never through innerHTML: markup in an agent id, a query or a step's output is shown, not run.
 * The server's Content-Security-Policy forbids inline scripts; this file is the only script.
 */
(function () {
  'use strict';

  var SVG = 'http://www.w3.org/2000/svg';
  var session = null; // { scopes: [...], csrf }
  var app = document.getElementById('app');
  var nav = document.getElementById('nav');

  // ---- DOM helpers: text only ---------------------------------------------------------------

  function h(tag, attrs) {
    var el = document.createElement(tag);
    setAttrs(el, attrs);
    for (var i = 2; i < arguments.length; i++) append(el, arguments[i]);
    return el;
  }

  function s(tag, attrs) {
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
      if (k === 'onclick' || k === 'onsubmit' || k === 'onchange') el.addEventListener(k.slice(2), v);
      else if (k === 'text') el.textContent = String(v);
      else el.setAttribute(k, String(v));
    });
  }

  function append(el, child) {
    if (child === null || child === undefined || child === false) return;
    if (Array.isArray(child))
      return child.forEach(function (c) {
        append(el, c);
      });
    el.appendChild(typeof child === 'object' ? child : document.createTextNode(String(child)));
  }

  function show() {
    app.textContent = '';
    for (var i = 0; i < arguments.length; i++) append(app, arguments[i]);
  }

  function fmtNum(n) {
    return n === null || n === undefined ? '–' : Number(n).toLocaleString('en-US');
  }
  function fmtMs(ms) {
    if (ms === null || ms === undefined) return '–';
    if (ms < 1000) return ms + ' ms';
    if (ms < 120000) return (ms / 1000).toFixed(1) + ' s';
    return (ms / 60000).toFixed(1) + ' min';
  }
  function fmtTime(iso) {
    return iso ? iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '–';
  }
  function badge(status) {
    return h('span', { class: 'badge ' + status, text: status });
  }
  function link(href, text) {
    return h('a', { href: href, text: text });
  }
  function enc(x) {
    return encodeURIComponent(x);
  }
  function card(label, value) {
    return h(
      'div',
      { class: 'card' },
      h('div', { class: 'value', text: value }),
      h('div', { class: 'label', text: label }),
    );
  }
  function errorBox(err) {
    return h('p', { class: 'error', role: 'alert', text: err && err.message ? err.message : String(err) });
  }

  // ---- the API ------------------------------------------------------------------------------

  function api(path, opts) {
    opts = opts || {};
    var headers = { accept: 'application/json' };
    if (opts.method && opts.method !== 'GET') {
      headers['x-csrf-token'] = session ? session.csrf : '';
      if (opts.body !== undefined) headers['content-type'] = 'application/json';
    }
    return fetch(path, {
      method: opts.method || 'GET',
      headers: headers,
      credentials: 'same-origin',
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    }).then(function (res) {
      return res.text().then(function (text) {
        var body;
        try {
          body = text ? JSON.parse(text) : null;
        } catch {
          body = { error: text };
        }
        if (res.status === 401 && path !== '/console/session') {
          session = null;
          signIn('Your sign-in has expired: sign in again.');
          throw new Error('not signed in');
        }
        if (!res.ok) throw new Error((body && body.error) || res.status + ' ' + res.statusText);
        return body;
      });
    });
  }

  function isAdmin() {
    return !!session && session.scopes.indexOf('admin') >= 0;
  }

  // ---- sign-in --------------------------------------------------------------------------------

  function signIn(message) {
    nav.textContent = '';
    var input = h('input', {
      type: 'password',
      id: 'api-key',
      name: 'key',
      autocomplete: 'off',
      placeholder: 'API key (HTTP_READ_KEYS or HTTP_ADMIN_KEYS)',
      required: true,
    });
    var out = h('div');
    var form = h(
      'form',
      {
        class: 'signin',
        id: 'signin',
        onsubmit: function (e) {
          e.preventDefault();
          out.textContent = '';
          api('/console/session', { method: 'POST', body: { key: input.value } }).then(
            function (s) {
              session = s;
              input.value = '';
              route();
            },
            function (err) {
              append(out, errorBox(err));
            },
          );
        },
      },
      h('h1', { text: 'Sign in' }),
      message ? h('p', { class: 'muted', text: message }) : null,
      h('label', { for: 'api-key', text: 'API key' }),
      input,
      h('button', { type: 'submit', text: 'Sign in' }),
      h('p', {
        class: 'muted',
        text: 'The key is exchanged for a session cookie; read keys see everything, admin keys may also replay and purge dead letters.',
      }),
      out,
    );
    show(form);
  }

  function drawNav(active) {
    nav.textContent = '';
    [
      ['plans', 'Plans'],
      ['dead-letters', 'Dead letters'],
      ['health', 'Health'],
      ['analytics', 'Analytics'],
    ].forEach(function (p) {
      append(nav, h('a', { href: '#/' + p[0], class: active === p[0] ? 'active' : null, text: p[1] }));
    });
    append(
      nav,
      h('button', {
        id: 'sign-out',
        text: 'Sign out',
        onclick: function () {
          api('/console/session', { method: 'DELETE' }).then(function () {
            session = null;
            signIn('Signed out.');
          });
        },
      }),
    );
  }

  // ---- router ---------------------------------------------------------------------------------

  function route() {
    if (!session) return signIn();
    var hash = location.hash.replace(/^#\/?/, '');
    var q = {};
    var qi = hash.indexOf('?');
    if (qi >= 0) {
      hash
        .slice(qi + 1)
        .split('&')
        .forEach(function (kv) {
          var i = kv.indexOf('=');
          if (i > 0) q[decodeURIComponent(kv.slice(0, i))] = decodeURIComponent(kv.slice(i + 1));
        });
      hash = hash.slice(0, qi);
    }
    var parts = hash.split('/').map(decodeURIComponent);
    var page = parts[0] || 'plans';
    drawNav(page === 'sessions' ? 'plans' : page);
    show(h('p', { class: 'muted', text: 'Loading…' }));
    var done;
    if (page === 'plans' && parts[1]) done = planPage(parts[1]);
    else if (page === 'plans') done = plansPage(q);
    else if (page === 'sessions' && parts[1]) done = sessionPage(parts[1]);
    else if (page === 'dead-letters' && parts[1]) done = deadLetterPage(parts[1]);
    else if (page === 'dead-letters') done = deadLettersPage(q);
    else if (page === 'health') done = healthPage();
    else if (page === 'analytics') done = analyticsPage();
    else done = Promise.resolve(show(h('p', { class: 'error', text: 'No such page: ' + hash })));
    done.catch(function (err) {
      if (session) show(errorBox(err));
    });
  }

  function toQuery(q) {
    return Object.keys(q)
      .filter(function (k) {
        return q[k] !== undefined && q[k] !== '';
      })
      .map(function (k) {
        return enc(k) + '=' + enc(q[k]);
      })
      .join('&');
  }

  // ---- plans ------------------------------------------------------------------------------------

  var PAGE = 20;

  function plansPage(q) {
    var offset = Number(q.offset || 0);
    var filter = { sessionId: q.sessionId, status: q.status, agentId: q.agentId, from: q.from, to: q.to };
    return api('/v1/plans?' + toQuery(Object.assign({}, filter, { limit: PAGE, offset: offset }))).then(
      function (page) {
        var fields = {};
        function field(name, label, attrs) {
          fields[name] = h('input', Object.assign({ name: name, value: q[name] || '' }, attrs || {}));
          return h('label', null, label, fields[name]);
        }
        var status = h(
          'select',
          { name: 'status' },
          ['', 'planning', 'executing', 'completed', 'failed', 'cancelled'].map(function (st) {
            return h('option', { value: st, selected: (q.status || '') === st, text: st || 'any status' });
          }),
        );
        var search = h('input', { name: 'planId', placeholder: 'plan id', id: 'plan-search' });
        var form = h(
          'form',
          {
            class: 'filters',
            id: 'plan-filters',
            onsubmit: function (e) {
              e.preventDefault();
              var next = {
                sessionId: fields.sessionId.value.trim(),
                status: status.value,
                agentId: fields.agentId.value.trim(),
                from: fields.from.value.trim(),
                to: fields.to.value.trim(),
              };
              location.hash = '#/plans?' + toQuery(next);
            },
          },
          field('sessionId', 'Session'),
          h('label', null, 'Status', status),
          field('agentId', 'Agent'),
          field('from', 'Created from (ISO)', { placeholder: '2026-01-01' }),
          field('to', 'to (exclusive)', { placeholder: '2026-02-01' }),
          h('button', { type: 'submit', text: 'Filter' }),
        );
        var searchForm = h(
          'form',
          {
            class: 'filters',
            id: 'plan-search-form',
            onsubmit: function (e) {
              e.preventDefault();
              if (search.value.trim()) location.hash = '#/plans/' + enc(search.value.trim());
            },
          },
          h('label', null, 'Open a plan by id', search),
          h('button', { type: 'submit', text: 'Open' }),
        );
        var rows = page.plans.map(function (p) {
          return h(
            'tr',
            { 'data-plan': p.planId },
            h('td', null, link('#/plans/' + enc(p.planId), p.planId)),
            h('td', null, link('#/sessions/' + enc(p.sessionId), p.sessionId)),
            h('td', null, badge(p.status)),
            h('td', { class: 'num', text: p.completedSteps + '/' + p.totalSteps }),
            h('td', { class: 'num', text: fmtNum(p.inputTokens + p.outputTokens) }),
            h('td', { text: fmtTime(p.createdAt) }),
            h('td', { text: p.query.length > 120 ? p.query.slice(0, 119) + '…' : p.query }),
          );
        });
        var pager = h(
          'p',
          null,
          offset > 0
            ? link('#/plans?' + toQuery(Object.assign({}, filter, { offset: Math.max(0, offset - PAGE) })), '← newer')
            : null,
          ' ',
          h('span', {
            class: 'muted',
            text: page.total === 0 ? 'no plans' : offset + 1 + '–' + (offset + page.plans.length) + ' of ' + page.total,
          }),
          ' ',
          offset + PAGE < page.total
            ? link('#/plans?' + toQuery(Object.assign({}, filter, { offset: offset + PAGE })), 'older →')
            : null,
        );
        show(
          h('h1', { text: 'Plans' }),
          searchForm,
          form,
          h(
            'table',
            { id: 'plans' },
            h(
              'thead',
              null,
              h(
                'tr',
                null,
                ['Plan', 'Session', 'Status', 'Steps', 'Tokens', 'Created', 'Query'].map(function (t) {
                  return h('th', { text: t });
                }),
              ),
            ),
            h('tbody', null, rows),
          ),
          pager,
        );
      },
    );
  }

  function planPage(planId) {
    var started = performance.now();
    return Promise.all([
      api('/v1/plans/' + enc(planId)),
      api('/v1/workflows/' + enc(planId) + '/resume-point').catch(function () {
        return null;
      }),
    ]).then(function (r) {
      var view = r[0];
      var resume = r[1];
      var p = view.plan;
      var steps = view.steps;
      var outputBox = h('div', { id: 'step-output' });
      show(
        h('h1', { text: 'Plan ' + p.planId }),
        h(
          'p',
          null,
          badge(p.status),
          ' ',
          'session ',
          link('#/sessions/' + enc(p.sessionId), p.sessionId),
          ' · created ',
          fmtTime(p.createdAt),
          p.completedAt ? ' · ended ' + fmtTime(p.completedAt) : '',
        ),
        h('p', { class: 'query', text: p.query }),
        p.failureReason ? h('p', { class: 'error', text: 'Failure: ' + p.failureReason }) : null,
        h(
          'div',
          { class: 'cards' },
          card('steps', p.totalSteps),
          card('completed', p.completedSteps),
          card('failed', p.failedSteps),
          card('skipped', p.skippedSteps),
          card('input tokens', fmtNum(p.inputTokens)),
          card('output tokens', fmtNum(p.outputTokens)),
          card('cost (USD)', costText(p)),
          card('duration', fmtMs(p.durationMs)),
        ),
        h('h2', { text: 'DAG' }),
        h(
          'div',
          { class: 'legend' },
          ['completed', 'failed', 'running', 'pending', 'skipped'].map(function (st) {
            return h('span', null, badge(st));
          }),
          h('span', { text: '▭ dashed: resume point (next layer to run)' }),
          h('span', { text: '⚑ last checkpoint' }),
        ),
        h('div', { class: 'scroll' }, dagSvg(steps, resume, view.checkpoints)),
        h('h2', { text: 'Timeline (per agent)' }),
        h('div', { class: 'scroll' }, ganttSvg(steps, p)),
        h('h2', { text: 'Decisions' }),
        decisionsTable(view.decisions),
        h('h2', { text: 'Handoffs' }),
        handoffsTable(view.handoffs),
        h('h2', { text: 'Checkpoints' }),
        checkpointsTable(view.checkpoints, resume),
        h('h2', { text: 'Steps' }),
        stepsTable(p.planId, steps, outputBox),
        outputBox,
      );
      var ms = Math.round(performance.now() - started);
      var dag = document.getElementById('dag');
      if (dag) dag.setAttribute('data-render-ms', String(ms));
      performance.mark('plan-rendered');
    });
  }

  /** Layer of each step: 0 without dependencies, else one past its deepest dependency. */
  function layersOf(steps, resume) {
    var byId = {};
    steps.forEach(function (st) {
      byId[st.stepId] = st;
    });
    if (resume && resume.resumable && resume.dag && resume.dag.layers) return orderLayers(resume.dag.layers, byId);
    var layer = {};
    function depth(id, seen) {
      if (layer[id] !== undefined) return layer[id];
      if (seen[id]) return 0; // a cycle: should not happen, never loops
      seen[id] = true;
      var d = 0;
      (byId[id].dependsOn || []).forEach(function (dep) {
        if (byId[dep]) d = Math.max(d, depth(dep, seen) + 1);
      });
      layer[id] = d;
      return d;
    }
    var layers = [];
    steps.forEach(function (st) {
      var d = depth(st.stepId, {});
      (layers[d] = layers[d] || []).push(st.stepId);
    });
    return orderLayers(
      layers.map(function (l) {
        return l || [];
      }),
      byId,
    );
  }

  /**
   * Fewer crossing edges: each layer after the first is sorted by the mean row of its steps'
   * dependencies in the layer before (the barycenter heuristic of layered drawing), stable for ties.
   */
  function orderLayers(layers, byId) {
    var row = {};
    return layers.map(function (ids, li) {
      var keyed = ids.map(function (id, i) {
        var deps =
          li === 0
            ? []
            : ((byId[id] && byId[id].dependsOn) || []).filter(function (d) {
                return row[d] !== undefined;
              });
        var center = deps.length
          ? deps.reduce(function (a, d) {
              return a + row[d];
            }, 0) / deps.length
          : i;
        return { id: id, center: center, i: i };
      });
      keyed.sort(function (a, b) {
        return a.center - b.center || a.i - b.i;
      });
      keyed.forEach(function (k, i) {
        row[k.id] = i;
      });
      return keyed.map(function (k) {
        return k.id;
      });
    });
  }

  function dagSvg(steps, resume, checkpoints) {
    var layers = layersOf(steps, resume);
    var byId = {};
    steps.forEach(function (st) {
      byId[st.stepId] = st;
    });
    var next = {};
    if (resume && resume.resumable && resume.nextSteps)
      resume.nextSteps.forEach(function (st) {
        next[st.stepId] = true;
      });
    // the resume point's checkpoint, else (a plan that cannot resume) the newest one stored
    var checkpointLayer = resume && resume.resumable && resume.latestCheckpoint ? resume.latestCheckpoint.layer : null;
    if (checkpointLayer === null && checkpoints && checkpoints.length) {
      checkpointLayer = checkpoints.reduce(function (a, b) {
        return a.at > b.at || (a.at === b.at && a.layer > b.layer) ? a : b;
      }).layer;
    }
    var W = 170,
      H = 40,
      GX = 60,
      GY = 14,
      TOP = 34;
    var tallest = layers.reduce(function (m, l) {
      return Math.max(m, l.length);
    }, 1);
    var width = layers.length * (W + GX) + GX;
    var height = TOP + tallest * (H + GY) + 10;
    var pos = {};
    layers.forEach(function (ids, li) {
      ids.forEach(function (id, i) {
        pos[id] = { x: GX / 2 + li * (W + GX), y: TOP + i * (H + GY) };
      });
    });
    var svg = s('svg', {
      id: 'dag',
      width: width,
      height: height,
      viewBox: '0 0 ' + width + ' ' + height,
      role: 'img',
      'aria-label': 'plan DAG by layer',
    });
    layers.forEach(function (ids, li) {
      var x = GX / 2 + li * (W + GX);
      append(svg, s('text', { class: 'dag-layer-label', x: x, y: 14, text: 'layer ' + li }));
      if (checkpointLayer === li)
        append(
          svg,
          s('text', { class: 'dag-checkpoint', 'data-checkpoint-layer': li, x: x + 60, y: 14, text: '⚑ checkpoint' }),
        );
    });
    steps.forEach(function (st) {
      var to = pos[st.stepId];
      (st.dependsOn || []).forEach(function (dep) {
        var from = pos[dep];
        if (!from || !to) return;
        var x1 = from.x + W,
          y1 = from.y + H / 2,
          x2 = to.x,
          y2 = to.y + H / 2;
        append(
          svg,
          s('path', {
            class: 'dag-edge',
            d:
              'M' +
              x1 +
              ',' +
              y1 +
              ' C' +
              (x1 + GX / 2) +
              ',' +
              y1 +
              ' ' +
              (x2 - GX / 2) +
              ',' +
              y2 +
              ' ' +
              x2 +
              ',' +
              y2,
          }),
        );
      });
    });
    Object.keys(pos).forEach(function (id) {
      var st = byId[id];
      var status = st ? st.status : 'pending';
      var label = st ? st.stepId + ' · ' + st.agentId : id;
      var g = s(
        'g',
        {
          class: 'dag-node ' + status + (next[id] ? ' resume' : ''),
          'data-step': id,
          'data-status': status,
          transform: 'translate(' + pos[id].x + ',' + pos[id].y + ')',
        },
        s('title', { text: label + ' (' + status + ')' + (st && st.title ? ': ' + st.title : '') }),
        s('rect', { width: W, height: H, rx: 5 }),
        s('text', { x: 8, y: 16, text: clip(st ? st.stepId : id, 24) }),
        s('text', { x: 8, y: 31, text: clip((st ? st.agentId : '') + ' · ' + status, 26) }),
      );
      append(svg, g);
    });
    return svg;
  }

  function clip(text, n) {
    text = String(text);
    return text.length > n ? text.slice(0, n - 1) + '…' : text;
  }

  function ganttSvg(steps, plan) {
    var agents = [];
    steps.forEach(function (st) {
      if (agents.indexOf(st.agentId) < 0) agents.push(st.agentId);
    });
    var times = [];
    steps.forEach(function (st) {
      if (st.startedAt) times.push(Date.parse(st.startedAt));
      if (st.completedAt) times.push(Date.parse(st.completedAt));
    });
    var t0 = times.length
      ? times.reduce(function (a, b) {
          return Math.min(a, b);
        })
      : Date.parse(plan.createdAt);
    var t1 = times.length
      ? times.reduce(function (a, b) {
          return Math.max(a, b);
        })
      : t0 + 1;
    if (t1 <= t0) t1 = t0 + 1;
    var LEFT = 170,
      WIDTH = 900,
      ROW = 26,
      TOP = 24;
    var rowsPerAgent = {};
    var rowOf = {};
    var row = 0;
    agents.forEach(function (a) {
      var mine = steps.filter(function (st) {
        return st.agentId === a;
      });
      rowsPerAgent[a] = { first: row, count: mine.length };
      mine.forEach(function (st) {
        rowOf[st.stepId] = row++;
      });
    });
    var height = TOP + row * ROW + 10;
    var svg = s('svg', {
      id: 'timeline',
      width: LEFT + WIDTH + 80,
      height: height,
      role: 'img',
      'aria-label': 'steps per agent over time',
    });
    append(svg, s('text', { x: LEFT, y: 14, class: 'dag-layer-label', text: fmtTime(new Date(t0).toISOString()) }));
    append(
      svg,
      s('text', { x: LEFT + WIDTH - 140, y: 14, class: 'dag-layer-label', text: fmtTime(new Date(t1).toISOString()) }),
    );
    agents.forEach(function (a) {
      append(svg, s('text', { x: 4, y: TOP + rowsPerAgent[a].first * ROW + 16, text: clip(a, 24) }));
    });
    var scale = WIDTH / (t1 - t0);
    steps.forEach(function (st) {
      var y = TOP + rowOf[st.stepId] * ROW + 4;
      var start = st.startedAt ? Date.parse(st.startedAt) : null;
      var end = st.completedAt ? Date.parse(st.completedAt) : start !== null ? t1 : null;
      var x = start === null ? LEFT + WIDTH : LEFT + (start - t0) * scale;
      var w = start === null ? 6 : Math.max(3, (end - start) * scale);
      var bar = s(
        'rect',
        {
          class: 'gantt-bar ' + (start === null ? 'pending' : st.status),
          'data-step': st.stepId,
          x: x,
          y: y,
          width: w,
          height: ROW - 8,
          rx: 2,
        },
        s('title', {
          text:
            st.stepId +
            ' · ' +
            st.agentId +
            ' · ' +
            st.status +
            ' · ' +
            (start === null ? 'not run' : fmtMs(st.durationMs)),
        }),
      );
      append(svg, bar);
      append(
        svg,
        s('text', {
          x: Math.min(x + w + 4, LEFT + WIDTH + 6),
          y: y + 13,
          text: clip(st.stepId, 16) + (st.durationMs !== null ? ' ' + fmtMs(st.durationMs) : ''),
        }),
      );
    });
    return svg;
  }

  function table(id, head, rows, empty) {
    if (rows.length === 0) return h('p', { class: 'muted', id: id, text: empty });
    return h(
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

  function decisionsTable(decisions) {
    return table(
      'decisions',
      ['When', 'Decision', 'By', 'What changed', 'Feedback'],
      decisions.map(function (d) {
        var changed = '–';
        if (d.stepChanges) {
          var c = d.stepChanges;
          var parts = [];
          if (c.added.length) parts.push('added ' + c.added.join(', '));
          if (c.changed.length) parts.push('changed ' + c.changed.join(', '));
          if (c.removed.length) parts.push('removed ' + c.removed.join(', '));
          // what the edit replaced: the old task text of each changed or removed step
          (c.replaced || []).forEach(function (r) {
            parts.push(r.stepId + ' was "' + (r.task || r.title || '') + '"');
          });
          changed = (parts.length ? parts.join('; ') : 'no step changed') + ' (' + d.editedStepCount + ' steps after)';
        } else if (d.editedStepCount !== null) {
          changed = d.editedStepCount + ' steps after the edit';
        }
        return h(
          'tr',
          { 'data-decision': d.decision },
          h('td', { text: fmtTime(d.at) }),
          h('td', null, badge(d.decision)),
          h('td', { text: d.decidedBy || '–' }),
          h('td', { text: changed }),
          h('td', { text: d.feedback || '' }),
        );
      }),
      'No decisions recorded.',
    );
  }

  function handoffsTable(handoffs) {
    return table(
      'handoffs',
      ['When', 'From', 'To', 'Step', 'Reason'],
      handoffs.map(function (x) {
        return h(
          'tr',
          null,
          h('td', { text: fmtTime(x.at) }),
          h('td', { text: x.fromAgentId }),
          h('td', { text: x.toAgentId }),
          h('td', { text: x.stepId || '–' }),
          h('td', { text: x.reason + (x.explanation ? ': ' + x.explanation : '') }),
        );
      }),
      'No handoffs.',
    );
  }

  function checkpointsTable(checkpoints, resume) {
    var latest = resume && resume.resumable && resume.latestCheckpoint ? resume.latestCheckpoint.checkpointId : null;
    return table(
      'checkpoints',
      ['When', 'Checkpoint', 'Layer', ''],
      checkpoints.map(function (c) {
        return h(
          'tr',
          null,
          h('td', { text: fmtTime(c.at) }),
          h('td', { text: c.checkpointId }),
          h('td', { class: 'num', text: c.layer }),
          h('td', { text: c.checkpointId === latest ? 'latest (resume from here)' : '' }),
        );
      }),
      'No checkpoints.',
    );
  }

  function stepsTable(planId, steps, outputBox) {
    return table(
      'steps',
      ['#', 'Step', 'Agent', 'Status', 'Model', 'Tokens in/out', 'Cost (USD)', 'Duration', 'Result / error', ''],
      steps.map(function (st) {
        return h(
          'tr',
          { 'data-step': st.stepId },
          h('td', { class: 'num', text: st.index }),
          h('td', { text: st.stepId + (st.title ? ' — ' + st.title : '') }),
          h('td', { text: st.agentId }),
          h('td', null, badge(st.status)),
          h('td', { text: st.model || '–' }),
          h('td', { class: 'num', text: fmtNum(st.inputTokens) + ' / ' + fmtNum(st.outputTokens) }),
          h('td', {
            class: 'num step-cost',
            title: st.priceRef || st.costSource || '',
            text:
              st.cost !== null && st.cost !== undefined
                ? '$' + st.cost
                : st.costSource === 'unpriced'
                  ? 'unpriced'
                  : '–',
          }),
          h('td', { class: 'num', text: fmtMs(st.durationMs) }),
          h('td', { text: st.error || st.result || '' }),
          h(
            'td',
            null,
            st.hasOutput
              ? h('button', {
                  class: 'show-output',
                  'data-step': st.stepId,
                  text: 'output',
                  onclick: function () {
                    outputBox.textContent = 'Loading…';
                    api('/v1/plans/' + enc(planId) + '/steps/' + enc(st.stepId) + '/output').then(
                      function (o) {
                        outputBox.textContent = '';
                        // shown as text, whatever it holds (markdown, HTML): never parsed as markup
                        append(outputBox, [
                          h('h2', { text: 'Output of ' + o.stepId + ' (shown as text)' }),
                          h('pre', {
                            id: 'output-text',
                            text: o.outputContent === null ? '(no stored output)' : o.outputContent,
                          }),
                        ]);
                      },
                      function (err) {
                        outputBox.textContent = '';
                        append(outputBox, errorBox(err));
                      },
                    );
                  },
                })
              : null,
          ),
        );
      }),
      'No steps.',
    );
  }

  // ---- sessions -----------------------------------------------------------------------------------

  function sessionPage(sessionId) {
    return Promise.all([
      api('/v1/sessions/' + enc(sessionId) + '/active'),
      api('/v1/sessions/' + enc(sessionId) + '/history?limit=50'),
    ]).then(function (r) {
      var active = r[0].activePlan;
      show(
        h('h1', { text: 'Session ' + sessionId }),
        h('h2', { text: 'Active plan (what the application restores)' }),
        active
          ? h(
              'p',
              { id: 'active-plan' },
              link('#/plans/' + enc(active.planId), active.planId),
              ' ',
              badge(active.status),
              ' ',
              active.completedSteps + '/' + active.totalSteps + ' steps · ',
              active.query,
            )
          : h('p', { class: 'muted', id: 'active-plan', text: 'No plan in progress.' }),
        h('h2', { text: 'History' }),
        table(
          'history',
          ['Plan', 'Status', 'Steps', 'Ended', 'Query'],
          r[1].plans.map(function (p) {
            return h(
              'tr',
              null,
              h('td', null, link('#/plans/' + enc(p.planId), p.planId)),
              h('td', null, badge(p.status)),
              h('td', { class: 'num', text: p.completedSteps + '/' + p.totalSteps }),
              h('td', { text: fmtTime(p.completedAt) }),
              h('td', { text: p.query }),
            );
          }),
          'No finished plans.',
        ),
      );
    });
  }

  // ---- dead letters ---------------------------------------------------------------------------------

  function deadLettersPage(q) {
    var filter = { type: q.type, kind: q.kind, plan: q.plan, since: q.since, until: q.until, limit: q.limit || '100' };
    return api('/v1/dead-letters?' + toQuery(filter)).then(function (list) {
      var inputs = {};
      function field(name, label, placeholder) {
        inputs[name] = h('input', { name: name, value: q[name] || '', placeholder: placeholder || '' });
        return h('label', null, label, inputs[name]);
      }
      var form = h(
        'form',
        {
          class: 'filters',
          id: 'dlq-filters',
          onsubmit: function (e) {
            e.preventDefault();
            var next = {};
            Object.keys(inputs).forEach(function (k) {
              next[k] = inputs[k].value.trim();
            });
            location.hash = '#/dead-letters?' + toQuery(next);
          },
        },
        field('type', 'Type', 'step.completed'),
        field('kind', 'Kind', 'invalid,conflict'),
        field('plan', 'Plan'),
        field('since', 'Since (ISO)'),
        field('until', 'Until (ISO)'),
        field('limit', 'Limit', '100'),
        h('button', { type: 'submit', text: 'Filter' }),
      );
      show(
        h('h1', { text: 'Dead letters' }),
        form,
        h('p', {
          class: 'muted',
          text:
            list.total +
            ' matching' +
            (list.total > list.deadLetters.length ? ', the oldest ' + list.deadLetters.length + ' shown' : ''),
        }),
        table(
          'dead-letters',
          ['Id', 'Kind', 'Type', 'Plan', 'Last failed', 'Reason'],
          list.deadLetters.map(function (d) {
            return h(
              'tr',
              { 'data-id': d.id },
              h('td', null, link('#/dead-letters/' + enc(d.id), d.id)),
              h('td', null, badge(d.kind)),
              h('td', { text: d.type || '–' }),
              h('td', { text: d.planId || '–' }),
              h('td', { text: fmtTime(d.lastFailedAt) }),
              h('td', { text: d.error.message }),
            );
          }),
          'No dead letters.',
        ),
      );
    });
  }

  function deadLetterPage(id) {
    return api('/v1/dead-letters/' + enc(id)).then(function (d) {
      var out = h('div', { id: 'action-result' });
      function act(verb) {
        var question =
          verb === 'replay'
            ? 'Put this event back on the queue? The worker stores it at most once.'
            : 'Remove this dead letter for good? Its event is not stored.';
        if (!window.confirm(question)) return;
        out.textContent = '';
        api('/v1/dead-letters/' + enc(id) + '/' + verb, { method: 'POST' }).then(
          function (r) {
            append(
              out,
              h('p', {
                class: 'notice',
                role: 'status',
                text:
                  verb === 'replay'
                    ? 'Replayed: ' +
                      r.replayed +
                      ' event(s) queued' +
                      (r.alreadyStored ? ' (' + r.alreadyStored + ' already stored)' : '') +
                      '.'
                    : 'Purged: ' + r.removed + ' removed.',
              }),
            );
          },
          function (err) {
            append(out, errorBox(err));
          },
        );
      }
      var actions = isAdmin()
        ? h(
            'p',
            null,
            h('button', {
              id: 'replay',
              text: 'Replay',
              onclick: function () {
                act('replay');
              },
            }),
            ' ',
            h('button', {
              id: 'purge',
              class: 'danger',
              text: 'Purge',
              onclick: function () {
                act('purge');
              },
            }),
          )
        : h('p', { class: 'muted', text: 'Replay and purge need an admin key (HTTP_ADMIN_KEYS).' });
      show(
        h('h1', { text: 'Dead letter ' + d.id }),
        h(
          'p',
          null,
          badge(d.kind),
          ' ',
          d.type || '(no type)',
          ' · plan ',
          d.planId || '–',
          ' · attempts ',
          String(d.attempts),
          ' · replayed ',
          String(d.replayCount),
          ' times · last failed ',
          fmtTime(d.lastFailedAt),
        ),
        h('h2', { text: 'Reason' }),
        h('pre', {
          id: 'reason',
          text:
            d.error.message +
            (d.error.violations
              ? '\n' +
                d.error.violations
                  .map(function (v) {
                    return v.path + ': ' + v.message;
                  })
                  .join('\n')
              : '') +
            (d.error.code ? '\ncode ' + d.error.code : ''),
        }),
        h('h2', { text: 'Original event' }),
        h('pre', { id: 'event', text: JSON.stringify(d.event, null, 2) }),
        actions,
        out,
      );
    });
  }

  // ---- health and analytics -------------------------------------------------------------------------

  function healthPage() {
    return api('/v1/health?minutes=30').then(function (hv) {
      var q = hv.queue;
      var dl = hv.deadLetters;
      show(
        h('h1', { text: 'Health' }),
        h(
          'div',
          { class: 'cards' },
          card('waiting jobs', q ? fmtNum(q.waiting) : '–'),
          card('active jobs', q ? fmtNum(q.active) : '–'),
          card('failed jobs', q ? fmtNum(q.failed) : '–'),
          card('oldest waiting', q && q.oldestWaitingAgeSeconds !== null ? q.oldestWaitingAgeSeconds + ' s' : '–'),
          card('dead letters', dl ? fmtNum(dl.total) : '–'),
          card('oldest dead letter', dl && dl.oldestAgeSeconds !== null ? dl.oldestAgeSeconds + ' s' : '–'),
        ),
        h('h2', { text: 'Dead letters by kind' }),
        barChart(
          'dlq-kinds',
          dl
            ? Object.keys(dl.byKind).map(function (k) {
                return [k, dl.byKind[k]];
              })
            : [],
        ),
        h('h2', { text: 'Events stored per minute (last 30 min, UTC)' }),
        barChart(
          'events-per-minute',
          hv.eventsPerMinute.map(function (m) {
            return [m.minute.slice(11, 16), m.events];
          }),
        ),
        h(
          'p',
          null,
          'Prometheus metrics: ',
          h('a', { href: '/metrics', text: '/metrics' }),
          ' (this server); each worker serves its own on HEALTH_PORT.',
        ),
      );
    });
  }

  function analyticsPage() {
    return Promise.all([
      api('/v1/analytics/daily'),
      api('/v1/analytics/agents'),
      api('/v1/analytics/tokens?by=model'),
      api('/v1/analytics/cost?by=model'),
      api('/v1/analytics/cost?by=agent'),
    ]).then(function (r) {
      show(
        h('h1', { text: 'Analytics' }),
        h('h2', { text: 'Plans per day' }),
        barChart(
          'plans-per-day',
          r[0].days.slice(0, 30).map(function (d) {
            return [d.day, d.totalPlans, d.completed + ' completed, ' + d.failed + ' failed'];
          }),
        ),
        h('h2', { text: 'Success rate per agent' }),
        barChart(
          'agent-success',
          r[1].agents.map(function (a) {
            return [
              a.agentId,
              a.successRate === null ? 0 : Math.round(a.successRate * 1000) / 10,
              a.completed + '/' + a.totalSteps + ' steps',
            ];
          }),
          100,
        ),
        h('h2', { text: 'Tokens per model' }),
        barChart(
          'tokens-per-model',
          (r[2].byModel || []).map(function (m) {
            return [
              m.model || '(none)',
              m.totalTokens,
              fmtNum(m.inputTokens) + ' in, ' + fmtNum(m.outputTokens) + ' out',
            ];
          }),
        ),
        h('h2', { text: 'Cost per model (USD)' }),
        barChart('cost-per-model', costBars(r[3])),
        h('h2', { text: 'Cost per agent (USD)' }),
        barChart('cost-per-agent', costBars(r[4])),
      );
    });
  }

  /** A plan's cost, and its steps no price is known for: never shown as a silent zero. */
  function costText(p) {
    if (p.cost === undefined || p.cost === null) return '–';
    return '$' + p.cost + (p.unpricedSteps ? ' + ' + p.unpricedSteps + ' unpriced' : '');
  }

  /** Bars of an analytics cost answer: the exact amount as text, unpriced steps named. */
  function costBars(answer) {
    return (answer.lines || []).map(function (l) {
      return [
        l.key || '(none)',
        Number(l.cost),
        l.pricedSteps + ' priced steps' + (l.unpricedSteps ? ', ' + l.unpricedSteps + ' unpriced' : ''),
        '$' + l.cost,
      ];
    });
  }

  /** Horizontal bars with the number beside each: rows of [label, value, note, shown instead of the value]. */
  function barChart(id, rows, max) {
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
    var svg = s('svg', { id: id, width: LEFT + W + 320, height: rows.length * ROW + 6, role: 'img' });
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
          text:
            (r[3] !== undefined ? r[3] : fmtNum(r[1]) + (max === 100 ? ' %' : '')) + (r[2] ? '  (' + r[2] + ')' : ''),
        }),
      );
    });
    return h('div', { class: 'scroll' }, svg);
  }

  // ---- start ----------------------------------------------------------------------------------------

  window.addEventListener('hashchange', route);
  api('/console/session').then(
    function (s) {
      session = s;
      route();
    },
    function () {
      signIn();
    },
  );
})();
