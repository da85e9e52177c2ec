"""Unit tests of the client that need no server (an unreachable port stands for a server that is down).

Run: python3 -m unittest discover -s clients/python/tests (npm test runs them too).
"""
import json
import os
import socket
import sys
import tempfile
import time
import unittest
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from plan_ledger import JournalLockedError, Plan, PlanLedgerClient, PlanLedgerError  # noqa: E402


def dead_url() -> str:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}"


class ClientWithoutServer(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="plan-ledger-py-")
        self.url = dead_url()

    def test_stamps_seq_per_plan_and_continues_a_plan(self) -> None:
        c = PlanLedgerClient(self.url, journal_dir=os.path.join(self.dir, "j"), max_backoff=0.2)
        try:
            a, b = Plan("plan-a", "s1"), Plan("plan-b", "s1")
            self.assertEqual(
                [c.step_started(a, "x").seq, c.step_started(a, "y").seq, c.step_started(b, "x").seq], [0, 1, 0]
            )
            c.continue_plan("plan-b", 7)
            r = c.step_started(b, "y")
            self.assertTrue(r.ok)
            self.assertEqual(r.seq, 7)
            self.assertEqual(uuid.UUID(r.event_id).version, 7)
            self.assertEqual(uuid.UUID(r.event_id).variant, uuid.RFC_4122)
            self.assertEqual(str(uuid.UUID(r.event_id)), r.event_id)
            # time-ordered: the first 48 bits are the ms, and one client's ids sort in stamping order
            self.assertLessEqual(abs(int(r.event_id[:8] + r.event_id[9:13], 16) - time.time() * 1000), 5000)
            ids = [c.step_started(a, "z").event_id for _ in range(10000)]
            self.assertEqual(len(set(ids)), 10000)
            self.assertEqual(sorted(ids), ids)
            with self.assertRaisesRegex(ValueError, "next_seq must be a non-negative integer"):
                c.continue_plan("plan-b", -1)
        finally:
            c.close(0.5)

    def test_publish_never_raises_and_journals_while_the_server_is_down(self) -> None:
        journal = os.path.join(self.dir, "j")
        c = PlanLedgerClient(self.url, journal_dir=journal, batch_size=10, max_backoff=0.2)
        plan = Plan("plan-down", "s1")
        for i in range(25):
            self.assertTrue(c.step_started(plan, f"s{i}").ok)
        deadline = time.monotonic() + 10
        while c.stats().journaled < 25 and time.monotonic() < deadline:
            time.sleep(0.02)
        self.assertEqual(c.stats().journaled, 25)
        self.assertFalse(c.flush(0.2))
        c.close(0.2)
        with open(os.path.join(journal, "journal.jsonl")) as f:
            events = [e for line in f for e in json.loads(line)]
        self.assertEqual([e["seq"] for e in events], list(range(25)))
        self.assertEqual(c.publish({"type": "step.started"}).reason, "closed")

    def test_one_client_per_journal_directory(self) -> None:
        journal = os.path.join(self.dir, "j")
        c = PlanLedgerClient(self.url, journal_dir=journal)
        try:
            with self.assertRaises(JournalLockedError):
                PlanLedgerClient(self.url, journal_dir=journal)
        finally:
            c.close(0.2)

    def test_drops_are_counted_past_the_buffer_bound(self) -> None:
        c = PlanLedgerClient(self.url, journal_dir=None, max_buffered=5, batch_size=1000, max_backoff=0.2)
        try:
            results = [c.step_started(Plan("p", "s"), "x").ok for _ in range(8)]
            self.assertEqual(results.count(False), 3)
            self.assertEqual(c.stats().dropped, 3)
        finally:
            c.close(0.2)

    def test_reads_say_the_server_is_unreachable(self) -> None:
        c = PlanLedgerClient(self.url, journal_dir=None)
        try:
            with self.assertRaisesRegex(PlanLedgerError, "unreachable"):
                c.active_plan("s1")
        finally:
            c.close(0.2)

    def test_rejects_a_bad_url(self) -> None:
        with self.assertRaisesRegex(ValueError, "base_url must be"):
            PlanLedgerClient("localhost:8080", journal_dir=None)


if __name__ == "__main__":
    unittest.main()
