/*
 * Approvals: the inbox (pending first, oldest first, filtered by status and assignee) and one
 * approval with its decide form (approve, edit with the edited arguments' digest, or reject, with
 * feedback). A decision is POST /v1/approvals/{id}/decide: the server stores it as an
 * approval.decided event whose decidedBy is the name of the key the console was signed in with.
 */
import { api, canApprove, canRead } from './api.js';
import { append, badge, clip, enc, errorBox, fmtAge, fmtTime, h, link, show, table, toQuery } from './dom.js';
import { watch } from './live.js';

/**
 * Where the console learns whether approvals changed: counts and a change marker, for a status and
 * assignee filter. The header watches it unfiltered, each page with its own filter (its own ETag).
 */
export var APPROVALS_SUMMARY_PATH = '/console/approvals/summary';
export var APPROVAL_STATUSES = ['pending', 'expired', 'decided', 'consumed'];
var INBOX_LIMIT = 200;
var DIGEST = /^[0-9a-f]{64}$/;
var FEEDBACK_MAX = 4000;

/** The statuses the inbox asks for, in the order it lists them: `all` is pending first. */
export function inboxStatuses(status) {
  return APPROVAL_STATUSES.indexOf(status) >= 0 ? [status] : APPROVAL_STATUSES.slice();
}

/** What is wrong with a decide form's values, or null: the server's rules, said before sending. */
export function decideFormError(decision, editedArgsDigest, feedback) {
  if (['approve', 'edit', 'reject'].indexOf(decision) < 0) return 'Pick a decision: approve, edit or reject.';
  if (decision === 'edit' && !DIGEST.test(editedArgsDigest))
    return 'Edited args digest: give the SHA-256 of the edited arguments, 64 lower-case hex digits.';
  if (decision !== 'edit' && editedArgsDigest) return 'Edited args digest: only an edit carries one.';
  if (feedback.length > FEEDBACK_MAX) return 'Feedback: at most ' + FEEDBACK_MAX + ' characters.';
  return null;
}

export function approvalsPage(q) {
  var status = q.status === 'all' || APPROVAL_STATUSES.indexOf(q.status) >= 0 ? q.status : 'pending';
  var assignee = q.assignee || '';
  var paths = inboxStatuses(status).map(function (st) {
    return '/v1/approvals?' + toQuery({ status: st, assignee: assignee, limit: INBOX_LIMIT });
  });
  return Promise.all(
    paths.map(function (p) {
      return api(p);
    }),
  ).then(function (answers) {
    var rows = [];
    answers.forEach(function (a) {
      rows = rows.concat(a.approvals);
    });
    // the rows' ages move every second: the page redraws when an approval of its filter changed
    watch([APPROVALS_SUMMARY_PATH + '?' + toQuery({ status: status, assignee: assignee })], function () {
      return approvalsPage(q);
    });
    show(
      h('h1', { text: 'Approvals' }),
      filterForm(status, assignee),
      h('p', {
        class: 'muted',
        id: 'approvals-count',
        text:
          rows.length +
          ' ' +
          (status === 'all' ? 'approval(s), pending first' : status) +
          (assignee ? ' for ' + assignee : '') +
          ', oldest first' +
          (answers.some(function (a) {
            return a.approvals.length >= INBOX_LIMIT;
          })
            ? ' (the first ' + INBOX_LIMIT + ' of each status)'
            : ''),
      }),
      canApprove() ? null : h('p', { class: 'muted', text: 'Deciding needs an approve key (HTTP_APPROVE_KEYS).' }),
      inboxTable(rows),
    );
  });
}

function filterForm(status, assignee) {
  var select = h(
    'select',
    { name: 'status', id: 'approvals-status' },
    ['pending', 'expired', 'decided', 'consumed', 'all'].map(function (st) {
      return h('option', { value: st, selected: st === status ? 'selected' : null, text: st });
    }),
  );
  var who = h('input', { name: 'assignee', id: 'approvals-assignee', value: assignee, placeholder: 'ops' });
  return h(
    'form',
    {
      class: 'filters',
      id: 'approvals-filters',
      onsubmit: function (e) {
        e.preventDefault();
        location.hash = '#/approvals?' + toQuery({ status: select.value, assignee: who.value.trim() });
      },
    },
    h('label', null, 'Status', select),
    h('label', null, 'Assignee', who),
    h('button', { type: 'submit', text: 'Filter' }),
  );
}

function inboxTable(rows) {
  var approve = canApprove();
  var head = ['Age', 'Approval', 'Plan', 'Step', 'Tool', 'argsDigest', 'Assignee', 'Reason', 'Status'];
  if (approve) head.push('Decide');
  return table(
    'approvals',
    head,
    rows.map(function (a) {
      return h(
        'tr',
        { 'data-approval': a.approvalId, 'data-status': a.status },
        h('td', { class: 'num', text: fmtAge(a.ageMs / 1000) }),
        h('td', null, link('#/approvals/' + enc(a.approvalId), a.approvalId)),
        h('td', null, planLink(a.planId)),
        h('td', { text: a.stepId }),
        h('td', { text: a.tool || '–' }),
        h('td', { class: 'digest', title: a.argsDigest }, h('code', { text: clip(a.argsDigest, 13) })),
        h('td', { text: a.assignee || '–' }),
        h('td', { text: a.reason || '–' }),
        h('td', null, badge(a.status), a.decision ? ' ' + a.decision + ' by ' + a.decidedBy : null),
        approve
          ? h(
              'td',
              null,
              a.status === 'pending'
                ? h('a', {
                    class: 'button decide-link',
                    href: '#/approvals/' + enc(a.approvalId),
                    text: 'Decide',
                    'aria-label': 'decide ' + a.approvalId,
                  })
                : null,
            )
          : null,
      );
    }),
    'No approvals.',
  );
}

/** A link to the plan for a key that reads plans; its id as text for an approve-only key. */
function planLink(planId) {
  return canRead() ? link('#/plans/' + enc(planId), planId) : h('span', { text: planId });
}

export function approvalPage(id, notice) {
  var path = '/v1/approvals/' + enc(id);
  return api(path).then(function (a) {
    // some approval changed: the page is drawn again only when this one did (a decide form being
    // filled in stays as it is while other approvals come and go)
    watch([APPROVALS_SUMMARY_PATH + '?status=all'], function () {
      return api(path).then(function (now) {
        if (now.status !== a.status || now.decidedAt !== a.decidedAt || now.consumedAt !== a.consumedAt)
          return approvalPage(id, notice);
      });
    });
    show(
      h('h1', { text: 'Approval ' + a.approvalId }),
      h('p', null, badge(a.status), ' requested ', fmtTime(a.requestedAt), ' · expires ', fmtTime(a.expiresAt)),
      h(
        'dl',
        { class: 'facts', id: 'approval-facts' },
        fact('Plan', planLink(a.planId)),
        fact('Step', a.stepId),
        fact('Tool', a.tool || '–'),
        fact('argsDigest', h('code', { text: a.argsDigest })),
        fact('Assignee', a.assignee || '–'),
        fact('Reason', a.reason || '–'),
        fact('Age', fmtAge(a.ageMs / 1000)),
        a.decision ? fact('Decision', a.decision + ' by ' + a.decidedBy + ' at ' + fmtTime(a.decidedAt)) : null,
        a.editedArgsDigest ? fact('Edited argsDigest', h('code', { text: a.editedArgsDigest })) : null,
        a.feedback ? fact('Feedback', a.feedback) : null,
        a.consumedAt ? fact('Consumed', fmtTime(a.consumedAt) + ' by ' + (a.consumedBy || '–')) : null,
      ),
      notice ? h('p', { class: 'notice', role: 'status', id: 'decide-result', text: notice }) : null,
      a.status === 'pending' && canApprove()
        ? decideForm(a)
        : a.status === 'pending'
          ? h('p', { class: 'muted', text: 'Deciding needs an approve key (HTTP_APPROVE_KEYS).' })
          : null,
      h('p', null, link('#/approvals', '← all pending approvals')),
    );
  });
}

function fact(label, value) {
  return [h('dt', { text: label }), h('dd', null, value)];
}

/** The decide form: one of approve / edit / reject, the edited digest for an edit, feedback. */
function decideForm(a) {
  var out = h('div', { id: 'decide-out' });
  var choices = ['approve', 'edit', 'reject'].map(function (d) {
    return h('input', { type: 'radio', name: 'decision', value: d, id: 'decision-' + d });
  });
  var digest = h('input', {
    id: 'edited-args-digest',
    name: 'editedArgsDigest',
    autocomplete: 'off',
    spellcheck: 'false',
    placeholder: '64 lower-case hex digits',
  });
  var feedback = h('textarea', { id: 'feedback', name: 'feedback', rows: 3, maxlength: FEEDBACK_MAX });
  var submit = h('button', { type: 'submit', id: 'decide-submit', text: 'Decide' });
  return h(
    'form',
    {
      id: 'decide-form',
      class: 'decide',
      onsubmit: function (e) {
        e.preventDefault();
        out.textContent = '';
        var picked = choices.filter(function (c) {
          return c.checked;
        })[0];
        var decision = picked ? picked.value : '';
        var edited = digest.value.trim();
        var problem = decideFormError(decision, edited, feedback.value);
        if (problem) return append(out, errorBox(problem));
        var body = { decision: decision };
        if (decision === 'edit') body.editedArgsDigest = edited;
        if (feedback.value) body.feedback = feedback.value;
        submit.disabled = true;
        api('/v1/approvals/' + enc(a.approvalId) + '/decide', { method: 'POST', body: body }).then(
          function (r) {
            // the page shows the decision once the worker has stored it; until then, what was accepted
            return approvalPage(
              a.approvalId,
              'Decided: ' + r.decision + ' by ' + r.decidedBy + ' (event ' + r.eventId + ' accepted).',
            );
          },
          function (err) {
            submit.disabled = false;
            append(out, errorBox(err));
          },
        );
      },
    },
    h('h2', { text: 'Decide' }),
    h(
      'fieldset',
      null,
      h('legend', { text: 'Decision' }),
      choices.map(function (c) {
        return h('label', { for: c.id, class: 'choice' }, c, ' ' + c.value);
      }),
    ),
    h('label', { for: 'edited-args-digest', text: 'Edited args digest (an edit only)' }),
    digest,
    h('label', { for: 'feedback', text: 'Feedback (optional)' }),
    feedback,
    submit,
    out,
  );
}
