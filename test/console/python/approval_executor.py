"""An executor in Python that asks a human before one tool call, with the client's approval helpers:
``request_approval``, then ``wait()`` (a long poll of the server) and ``consume()``, printing one JSON
line per stage. Used by test/console/approvals.browser.test.ts (the console decides in Chromium).

    python3 approval_executor.py <base_url> <plan_id> <session_id> <approval_id> <args_json>

Keys come from PLAN_LEDGER_INGEST_KEY and PLAN_LEDGER_READ_KEY.
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "clients", "python"))

from plan_ledger import ApprovalRefused, Plan, PlanLedgerClient  # noqa: E402


def say(**fields):
    print(json.dumps(fields), flush=True)


def main():
    base, plan_id, session_id, approval_id, args_json = sys.argv[1:6]
    ingest, read = os.environ["PLAN_LEDGER_INGEST_KEY"], os.environ["PLAN_LEDGER_READ_KEY"]
    args = json.loads(args_json)
    plan = Plan(plan_id, session_id)
    with PlanLedgerClient(base, ingest_key=ingest, read_key=read, journal_dir=None) as ledger:
        step = {"step_id": "send", "index": 0, "agent_id": "py-executor", "task": "send the mail"}
        ledger.plan_created(plan, query="mail the report", steps=[step])
        pending = ledger.request_approval(
            plan,
            "send",
            args,
            tool="send_mail",
            approval_id=approval_id,
            expires_in=600,
            assignee="ops",
            reason="mail leaves the company",
        )
        if not ledger.flush(timeout=30, stored=True):
            say(stage="error", error="the request was not stored")
            return 1
        say(stage="requested", approvalId=approval_id, argsDigest=pending.args_digest)
        approval = pending.wait(timeout=120)
        say(stage="decided", decision=approval.decision, decidedBy=approval.decided_by)
        try:
            taken = pending.consume(consumer="py-executor")
            say(stage="consumed", status=200, decision=taken.decision, decidedBy=taken.decided_by)
        except ApprovalRefused as refused:
            say(stage="consumed", status=refused.status, reason=refused.reason)
        try:
            pending.consume(consumer="py-executor")
            say(stage="again", status=200, reason=None)
        except ApprovalRefused as refused:
            say(stage="again", status=refused.status, reason=refused.reason)
    return 0


if __name__ == "__main__":
    sys.exit(main())
