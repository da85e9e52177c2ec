"""An executor in Python that asks a human before one tool call: it requests an approval, waits
for the decision and consumes it, printing one JSON line per stage. Used by
test/console/approvals.browser.test.ts (the console decides in Chromium).

    python3 approval_executor.py <base_url> <plan_id> <session_id> <approval_id> <args_json>

Keys come from PLAN_LEDGER_INGEST_KEY and PLAN_LEDGER_READ_KEY.
"""

import json
import os
import sys
import time
import urllib.request
from datetime import datetime, timedelta, timezone

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "clients", "python"))

from plan_ledger import Plan, PlanLedgerClient  # noqa: E402
from plan_ledger.digest import args_digest  # noqa: E402


def say(**fields):
    print(json.dumps(fields), flush=True)


def call(method, url, key, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("authorization", "Bearer " + key)
    if data is not None:
        req.add_header("content-type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=90) as res:
            return res.status, json.loads(res.read() or b"null")
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"null")


def main():
    base, plan_id, session_id, approval_id, args_json = sys.argv[1:6]
    ingest, read = os.environ["PLAN_LEDGER_INGEST_KEY"], os.environ["PLAN_LEDGER_READ_KEY"]
    args = json.loads(args_json)
    digest = args_digest(args)
    plan = Plan(plan_id, session_id)
    with PlanLedgerClient(base, ingest_key=ingest, read_key=read, journal_dir=None) as ledger:
        step = {"step_id": "send", "index": 0, "agent_id": "py-executor", "task": "send the mail"}
        ledger.plan_created(plan, query="mail the report", steps=[step])
        expires = (datetime.now(timezone.utc) + timedelta(minutes=10)).isoformat().replace("+00:00", "Z")
        ledger.publish(
            {
                "type": "approval.requested",
                "planId": plan_id,
                "sessionId": session_id,
                "payload": {
                    "approvalId": approval_id,
                    "stepId": "send",
                    "tool": "send_mail",
                    "argsDigest": digest,
                    "expiresAt": expires,
                    "assignee": "ops",
                    "reason": "mail leaves the company",
                },
            }
        )
        if not ledger.flush(timeout=30, stored=True):
            say(stage="error", error="the request was not stored")
            return 1
    say(stage="requested", approvalId=approval_id, argsDigest=digest)
    # the long poll: each GET is held until the approval is decided or expires (or waitMs passes)
    deadline = time.monotonic() + 120
    while True:
        status, view = call("GET", f"{base}/v1/approvals/{approval_id}?waitMs=20000", read)
        if status == 200 and view["status"] != "pending":
            break
        if time.monotonic() > deadline:
            say(stage="error", error=f"no decision: {status} {view}")
            return 1
        time.sleep(0.2)
    say(stage="decided", decision=view["decision"], decidedBy=view["decidedBy"])
    run_with = view["editedArgsDigest"] if view["decision"] == "edit" else digest
    status, answer = call(
        "POST",
        f"{base}/v1/approvals/{approval_id}/consume",
        ingest,
        {"argsDigest": run_with, "consumer": "py-executor"},
    )
    say(stage="consumed", status=status, decision=answer.get("decision"), decidedBy=answer.get("decidedBy"))
    status, again = call(
        "POST",
        f"{base}/v1/approvals/{approval_id}/consume",
        ingest,
        {"argsDigest": run_with, "consumer": "py-executor"},
    )
    say(stage="again", status=status, reason=again.get("reason"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
