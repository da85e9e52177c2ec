/*
 * The plan-ledger console: plain browser JavaScript as ES modules, no build step, no third-party code.
 * Every value that comes from an event reaches the page through textContent or an SVG text node,
 * never through innerHTML: markup in an agent id, a query or a step's output is shown, not run.
 * Control characters and bidirectional overrides in those values are shown escaped (text.js).
 * The server's Content-Security-Policy forbids inline scripts; the console's modules are served
 * from this server.
 */
import { api, canRead, state } from './api.js';
import { parseHash } from './router.js';
import { stop } from './live.js';
import { errorBox, h, show } from './dom.js';
import { announcePage, drawNav, signIn } from './shell.js';
import { planPage, plansPage } from './page-plans.js';
import { sessionPage } from './page-session.js';
import { comparePage } from './page-compare.js';
import { deadLetterPage, deadLettersPage } from './page-dead-letters.js';
import { healthPage } from './page-health.js';
import { analyticsPage } from './page-analytics.js';
import { reconcilePage } from './page-reconcile.js';
import { approvalPage, approvalsPage } from './page-approvals.js';

function route() {
  if (!state.session) return signIn();
  var where = parseHash(location.hash);
  // an approve-only key reads approvals alone: its console opens on them
  if (!canRead() && where.page !== 'approvals') where = parseHash('#/approvals');
  var page = where.page;
  var parts = where.parts;
  var q = where.q;
  stop(); // a page watches its own data: the previous page's stops here
  drawNav(page === 'sessions' ? 'plans' : page);
  show(h('p', { class: 'muted', text: 'Loading…' }));
  var done;
  if (page === 'plans' && parts[1] && parts[2] === 'compare' && parts[3]) done = comparePage(parts[1], parts[3]);
  else if (page === 'plans' && parts[1]) done = planPage(parts[1]);
  else if (page === 'plans') done = plansPage(q);
  else if (page === 'sessions' && parts[1]) done = sessionPage(parts[1], q);
  else if (page === 'dead-letters' && parts[1]) done = deadLetterPage(parts[1]);
  else if (page === 'dead-letters') done = deadLettersPage(q);
  else if (page === 'health') done = healthPage();
  else if (page === 'analytics') done = analyticsPage(q);
  else if (page === 'reconcile') done = reconcilePage();
  else if (page === 'approvals' && parts[1]) done = approvalPage(parts[1]);
  else if (page === 'approvals') done = approvalsPage(q);
  else done = Promise.resolve(show(h('p', { class: 'error', text: 'No such page: ' + where.path })));
  done
    .catch(function (err) {
      if (state.session) show(errorBox(err));
    })
    .then(announcePage);
}

state.onSignedIn = route;
state.onExpired = signIn;
window.addEventListener('hashchange', route);
api('/console/session').then(
  function (s) {
    state.session = s;
    route();
  },
  function () {
    signIn();
  },
);
