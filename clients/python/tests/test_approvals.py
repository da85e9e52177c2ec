"""request_approval, wait and consume against a stand-in server: the event they publish, the long poll they
issue again while the approval is pending, the retries while the server fails, and the typed refusal.
The real flow against serve and the worker: test/http/python-approvals.test.ts.

Run: python3 -m unittest discover -s clients/python/tests (npm test runs them too).
"""
import asyncio
import os
import sys
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from _fake_server import FakeServer  # noqa: E402
from plan_ledger import (  # noqa: E402
    Approval,
    ApprovalRefused,
    AsyncPlanLedgerClient,
    Plan,
    PlanLedgerClient,
    PlanLedgerError,
)
from plan_ledger.digest import args_digest  # noqa: E402

KEY = "ingest-key-0123456789abcdef"
ARGS = {"to": "ops@example.com", "n": 1}


def view(status, **more):
    base = {
        "approvalId": "ap1",
        "planId": "p1",
        "sessionId": "s1",
        "stepId": "s",
        "tool": "send_mail",
        "argsDigest": args_digest(ARGS),
        "expiresAt": "2030-01-01T00:00:00.000Z",
        "assignee": None,
        "reason": None,
        "requestedAt": "2026-01-01T00:00:00.000Z",
        "status": status,
        "decision": None,
        "decidedBy": None,
        "feedback": None,
        "editedArgsDigest": None,
        "decidedAt": None,
        "consumedAt": None,
        "consumedBy": None,
        "ageMs": 5,
    }
    base.update(more)
    return base


class ApprovalHelpers(unittest.TestCase):
    def setUp(self):
        self.server = FakeServer().start()
        self.client = PlanLedgerClient(self.server.url, ingest_key=KEY, journal_dir=None)

    def tearDown(self):
        self.client.close()
        self.server.stop()

    def test_request_publishes_the_digest_and_an_expiry(self):
        pending = self.client.request_approval(Plan("p1", "s1"), "s", ARGS, tool="send_mail", expires_in=60)
        self.assertTrue(self.client.flush(5))
        [event] = self.server.events
        self.assertEqual(event["type"], "approval.requested")
        self.assertEqual(event["payload"]["argsDigest"], args_digest(ARGS))
        self.assertEqual(event["payload"]["approvalId"], pending.approval_id)
        self.assertTrue(pending.approval_id.startswith("appr_"))
        self.assertEqual(event["seq"], pending.published.seq)
        self.assertNotIn("assignee", event["payload"])
        self.assertEqual(pending.expires_at, event["payload"]["expiresAt"])

    def test_request_refused_by_the_contract_raises_value_error(self):
        with self.assertRaisesRegex(ValueError, "approvalId"):
            self.client.request_approval(Plan("p1", "s1"), "s", ARGS, approval_id="not an id!")

    def test_wait_issues_the_long_poll_again_while_pending_and_returns_pending_at_the_timeout(self):
        self.server.routes["/v1/approvals/ap1"] = (200, view("pending"))
        started = time.monotonic()
        answer = self.client.wait_approval("ap1", timeout=0.3)
        self.assertGreaterEqual(time.monotonic() - started, 0.3)
        self.assertIsInstance(answer, Approval)
        self.assertEqual(answer.status, "pending")
        waits = [
            int(urllib.parse.parse_qs(urllib.parse.urlsplit(r[1]).query)["waitMs"][0]) for r in self.server.requests
        ]
        self.assertGreater(len(waits), 1)
        self.assertLessEqual(max(waits), 300)
        self.assertEqual(self.server.requests[0][2], f"Bearer {KEY}")

    def test_wait_returns_a_decision_typed(self):
        self.server.routes["/v1/approvals/ap1"] = (200, view("decided", decision="approve", decidedBy="alice"))
        answer = self.client.wait_approval("ap1")
        self.assertEqual((answer.status, answer.decision, answer.decided_by), ("decided", "approve", "alice"))
        self.assertEqual(answer["decidedBy"], "alice")

    def test_wait_retries_a_failing_server_until_the_timeout_then_raises(self):
        self.server.routes["/v1/approvals/ap1"] = (503, {"error": "the server is shutting down"})
        with self.assertRaises(PlanLedgerError) as caught:
            self.client.wait_approval("ap1", timeout=1.0)
        self.assertEqual(caught.exception.status, 503)
        self.assertGreater(len(self.server.requests), 1)

    def test_wait_for_an_approval_never_requested_is_refused_not_found(self):
        self.server.routes["/v1/approvals/ghost"] = (404, {"error": "no approval ghost was requested"})
        with self.assertRaises(ApprovalRefused) as caught:
            self.client.wait_approval("ghost", timeout=0.2)
        self.assertEqual((caught.exception.status, caught.exception.reason), (404, "not_found"))

    def test_consume_sends_the_digest_and_raises_the_ledgers_reason(self):
        pending = self.client.request_approval(Plan("p1", "s1"), "s", ARGS, approval_id="ap1")
        self.server.post_routes["/v1/approvals/ap1/consume"] = (200, view("consumed", decision="approve"))
        self.assertEqual(pending.consume(consumer="w7").status, "consumed")
        self.assertEqual(self.server.requests[-1][3], {"argsDigest": args_digest(ARGS), "consumer": "w7"})
        edited = {"to": "ops@example.com", "n": 2}
        pending.consume(edited)
        self.assertEqual(self.server.requests[-1][3], {"argsDigest": args_digest(edited)})
        refusal = {"error": "approval ap1 was consumed already", "reason": "already_consumed", "approval": view("x")}
        self.server.post_routes["/v1/approvals/ap1/consume"] = (409, refusal)
        with self.assertRaises(ApprovalRefused) as caught:
            pending.consume()
        err = caught.exception
        self.assertEqual((err.status, err.reason, err.message), (409, "already_consumed", refusal["error"]))
        self.assertEqual(err.approval["approvalId"], "ap1")


class AsyncApprovalHelpers(unittest.TestCase):
    def setUp(self):
        self.server = FakeServer().start()

    def tearDown(self):
        self.server.stop()

    def test_request_wait_and_consume_on_the_loop(self):
        self.server.routes["/v1/approvals/ap1"] = (200, view("decided", decision="approve"))
        self.server.post_routes["/v1/approvals/ap1/consume"] = (
            409,
            {"error": "approval ap1 was rejected", "reason": "rejected"},
        )

        async def executor():
            async with AsyncPlanLedgerClient(self.server.url, ingest_key=KEY, journal_dir=None) as ledger:
                pending = ledger.request_approval(Plan("p1", "s1"), "s", ARGS, approval_id="ap1")
                decided = await pending.wait(timeout=5)
                try:
                    await pending.consume()
                except ApprovalRefused as err:
                    return decided.decision, err.reason, (await ledger.wait_approval("ap1")).status

        self.assertEqual(asyncio.run(executor()), ("approve", "rejected", "decided"))


if __name__ == "__main__":
    unittest.main()
