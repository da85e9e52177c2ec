"""A Python executor's approvals, for test/http/python-approvals.test.ts. Prints one JSON line per milestone;
the test decides each request (publishing approval.decided with the printed seq) when it reads its line.

  approval_executor.py URL DIR PLAN

  1. requests A (send_mail), waits, consumes, runs the call; a second consume is refused (already_consumed)
  2. requests B, waits: rejected; its consume is refused (rejected); the call never runs
  3. requests C expiring in 3 s: pending after a 0.5 s wait, then expired; its consume is refused (expired)
  4. waits for an approval never requested: refused (not_found)
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "clients", "python"))
from plan_ledger import ApprovalRefused, Plan, PlanLedgerClient  # noqa: E402

ARGS = {"to": "ops@example.com", "subject": "Deploy 4.2", "body": "Going out at 14:00"}
runs = []


def say(**fields):
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def send_mail(pending, args):
    """The gated call: runs only once the ledger answered the consume."""
    approval = pending.consume(args, consumer="py-executor")
    runs.append(args)
    return approval


def refusal(fn):
    try:
        fn()
    except ApprovalRefused as err:
        return {"status": err.status, "reason": err.reason, "message": err.message}
    return None


url, journal, plan_id = sys.argv[1:4]
with PlanLedgerClient(url, ingest_key=os.environ["PLAN_LEDGER_INGEST_KEY"], journal_dir=journal) as ledger:
    plan = Plan(plan_id, "py-approvals")
    ledger.plan_created(plan, query="mail", steps=[{"stepId": "s1", "index": 0, "agentId": "mailer", "task": "mail"}])

    a = ledger.request_approval(plan, "s1", ARGS, tool="send_mail", assignee="ops", reason="outbound mail")
    say(requested="A", approvalId=a.approval_id, seq=a.published.seq, digest=a.args_digest)
    view = a.wait(timeout=120)
    approved = send_mail(a, ARGS)
    say(
        step="A",
        status=view.status,
        decision=approved.decision,
        decidedBy=approved.decided_by,
        feedback=approved.feedback,
        runs=len(runs),
        again=refusal(lambda: send_mail(a, ARGS)),
        runsAfter=len(runs),
    )

    b = ledger.request_approval(plan, "s1", ARGS, tool="send_mail")
    say(requested="B", approvalId=b.approval_id, seq=b.published.seq)
    view = b.wait(timeout=120)
    say(
        step="B",
        status=view.status,
        decision=view.decision,
        refused=refusal(lambda: send_mail(b, ARGS)),
        runs=len(runs),
    )

    c = ledger.request_approval(plan, "s1", ARGS, expires_in=3)
    say(requested="C", approvalId=c.approval_id, seq=c.published.seq)
    first = c.wait(timeout=0.5)
    second = c.wait(timeout=60)
    say(step="C", first=first.status, second=second.status, refused=refusal(lambda: send_mail(c, ARGS)), runs=len(runs))

    say(step="D", refused=refusal(lambda: ledger.wait_approval("py_ghost", timeout=0.5)))
