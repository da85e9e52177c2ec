"""The sender thread, the journal, stats, fork, SIGTERM and the asyncio client, against a stand-in server.

Run: python3 -m unittest discover -s clients/python/tests (no plan-ledger server needed). No test
asserts a duration: each proves what happened (what the server or the journal holds, which
waits the sender made), and waits generously for it.
"""
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from typing import Callable

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from _fake_server import FakeServer, free_port  # noqa: E402
from plan_ledger import AsyncPlanLedgerClient, NotFound, Plan, PlanLedgerClient, PlanLedgerError  # noqa: E402

PLAN = Plan("plan-sender", "sess-sender")


def wait_until(what: str, check: Callable[[], object], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def journal_events(directory: str):
    with open(os.path.join(directory, "journal.jsonl"), "rb") as f:
        return [e for line in f for e in json.loads(line)]


class Base(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="plan-ledger-py-")
        self.journal = os.path.join(self.dir, "j")
        self.servers = []
        self.clients = []

    def tearDown(self) -> None:
        for c in self.clients:
            c.close(0)
        for s in self.servers:
            s.stop()

    def server(self, port=None) -> FakeServer:
        s = FakeServer(port).start()
        self.servers.append(s)
        return s

    def client(self, url: str, **options) -> PlanLedgerClient:
        options.setdefault("journal_dir", self.journal)
        c = PlanLedgerClient(url, **options)
        self.clients.append(c)
        return c


class WakeUps(Base):
    def test_the_sender_sleeps_without_a_tick_and_a_publish_wakes_it(self) -> None:
        server = self.server()
        c = self.client(server.url)
        waits = []
        real_wait = c._wake.wait

        def recording_wait(timeout=None):
            waits.append(timeout)
            return real_wait(timeout)

        c._wake.wait = recording_wait  # type: ignore[method-assign]
        wait_until("the sender asleep", lambda: c._sleeping)
        before = len(waits)
        c.step_started(PLAN, "s1")
        wait_until(
            "the event at the server, and its answer counted",
            lambda: len(server.stored()) == 1 and c.stats().accepted == 1,
        )
        # woken by the publish: the wait it was in had no short timeout to end it
        self.assertTrue(all(t is None or t >= 1.0 for t in waits[: before + 1]), waits[: before + 1])
        self.assertEqual(c.stats().accepted, 1)

    def test_memory_reaches_the_journal_while_the_server_is_down_whatever_the_back_off(self) -> None:
        c = self.client(f"http://127.0.0.1:{free_port()}", probe_interval=3600, max_backoff=3600, journal_commit_ms=20)
        for i in range(10):
            c.step_started(PLAN, f"s{i}")
        wait_until("10 events journaled", lambda: c.stats().journaled == 10)
        # the next probe is an hour away: the group commit does not wait for it
        self.assertGreater(c._next_probe - time.monotonic(), 600)
        for i in range(10, 15):
            c.step_started(PLAN, f"s{i}")
        wait_until("15 events journaled", lambda: c.stats().journaled == 15)
        self.assertEqual([e["seq"] for e in journal_events(self.journal)], list(range(15)))

    def test_a_returning_server_is_used_after_a_probe(self) -> None:
        port = free_port()
        c = self.client(f"http://127.0.0.1:{port}", probe_interval=0.05, max_backoff=3600)
        c.step_started(PLAN, "s1")
        wait_until("the event journaled", lambda: c.stats().journaled == 1)
        server = self.server(port)
        c.step_started(PLAN, "s2")
        wait_until("both events at the server", lambda: len(server.stored()) == 2)
        self.assertGreaterEqual(server.probes, 1)
        self.assertTrue(c.flush(30))

    def test_flush_wakes_the_sender_and_cuts_the_probe_wait_short(self) -> None:
        port = free_port()
        c = self.client(f"http://127.0.0.1:{port}", probe_interval=3600, max_backoff=3600)
        c.step_started(PLAN, "s1")
        wait_until("the event journaled", lambda: c.stats().journaled == 1)
        server = self.server(port)
        self.assertTrue(c.flush(30))  # the next scheduled probe is an hour away
        self.assertEqual([e["payload"]["stepId"] for e in server.stored()], ["s1"])

    def test_close_with_the_server_down_returns_once_memory_is_journaled(self) -> None:
        c = self.client(
            f"http://127.0.0.1:{free_port()}", probe_interval=3600, max_backoff=3600, journal_commit_ms=3_600_000
        )
        for i in range(100):
            c.step_started(PLAN, f"s{i}")
        self.assertFalse(c.close(3600))  # returns (the test would hang otherwise), not delivered
        self.assertEqual(len(journal_events(self.journal)), 100)
        self.assertEqual(c.stats().journaled, 100)

    def test_a_refusing_server_is_retried_after_a_back_off_and_events_kept(self) -> None:
        server = self.server()
        answers = iter([(503, {"error": "busy"}), (401, {"error": "wrong key"})])
        server.on_post = lambda events: next(answers, None)
        c = self.client(server.url, max_backoff=0.05)
        c.step_started(PLAN, "s1")
        wait_until("the event stored", lambda: len(server.stored()) == 1)
        self.assertEqual(server.posts, 3)
        self.assertEqual(c.stats().dropped, 0)


def fail_first_post(client: PlanLedgerClient, error: BaseException) -> None:
    """The client's first POST raises ``error`` in its sender thread; the next ones are real."""
    real_post = client._post
    calls = []

    def failing_post(items, left=None):
        calls.append(len(items))
        if len(calls) == 1:
            raise error
        return real_post(items, left)

    client._post = failing_post  # type: ignore[method-assign]


class SenderSurvives(Base):
    def test_an_unexpected_error_is_counted_and_the_batch_kept(self) -> None:
        server = self.server()
        c = self.client(server.url, journal_dir=None)
        fail_first_post(c, RuntimeError("injected"))
        c.step_started(PLAN, "s1")
        wait_until(
            "the event stored after the error, and its answer counted",
            lambda: len(server.stored()) == 1 and c.stats().accepted == 1,
        )
        s = c.stats()
        self.assertEqual((s.sender_errors, s.lost, s.accepted), (1, 0, 1))
        self.assertTrue(c._thread.is_alive())
        c.step_started(PLAN, "s2")
        self.assertTrue(c.flush(30))
        self.assertEqual([e["seq"] for e in server.stored()], [0, 1])

    def test_after_an_unexpected_error_flush_waits_until_the_kept_batch_is_delivered(self) -> None:
        server = self.server()
        c = self.client(server.url)
        fail_first_post(c, LookupError("injected: unknown encoding: idna"))
        real_append = c._journal.append

        def slow_append(events):
            time.sleep(0.3)  # the kept batch is on its way to the journal for this long
            return real_append(events)

        c._journal.append = slow_append  # type: ignore[method-assign]
        for i in range(20):
            c.step_started(PLAN, f"s{i}")
        # true only once every event reached the server: never while the batch is between hand and journal
        self.assertTrue(c.flush(30))
        self.assertEqual(len(server.stored()), 20)
        s = c.stats()
        self.assertEqual((s.sender_errors, s.journaled, s.accepted, s.lost), (1, 20, 20, 0))

    def test_a_refused_event_in_a_batch_does_not_take_its_neighbours_with_it(self) -> None:
        server = self.server()

        def answer(events):
            results = []
            for i, e in enumerate(events):
                if e["payload"]["stepId"] == "bad":
                    results.append(
                        {
                            "index": i,
                            "status": "invalid",
                            "violations": [{"path": "payload", "message": "payload is refused by the server"}],
                        }
                    )
                else:
                    server.events.append(e)
                    results.append({"index": i, "status": "accepted", "eventId": e["eventId"], "seq": e["seq"]})
            return 202, {"accepted": len(events) - 1, "invalid": 1, "dropped": 0, "results": results}

        server.on_post = answer
        c = self.client(server.url)
        with self.assertLogs("plan_ledger", "WARNING") as logs:
            c.step_started(PLAN, "ok1")
            c.step_started(PLAN, "bad")
            c.step_started(PLAN, "ok2")
            self.assertTrue(c.flush(30))
        self.assertEqual(sorted(e["payload"]["stepId"] for e in server.stored()), ["ok1", "ok2"])
        s = c.stats()
        self.assertEqual((s.accepted, s.rejected, s.published), (2, 1, 3))
        line = "\n".join(logs.output)
        self.assertIn("step.started of plan plan-sender, seq 1, eventId ", line)
        self.assertIn("payload is refused by the server", line)

    def test_a_400_batch_is_split_so_one_event_cannot_refuse_the_others(self) -> None:
        server = self.server()
        server.on_post = (
            lambda events: (400, {"error": "unreadable"})
            if any(e["payload"]["stepId"] == "bad" for e in events)
            else None
        )
        c = self.client(server.url, journal_dir=None, probe_interval=3600, max_backoff=3600)
        c._reachable = False  # hold the events until all three are queued, then send them as one batch
        for step in ("ok1", "bad", "ok2"):
            c.step_started(PLAN, step)
        self.assertTrue(c.flush(30))
        self.assertEqual(sorted(e["payload"]["stepId"] for e in server.stored()), ["ok1", "ok2"])
        self.assertEqual(c.stats().rejected, 1)


class Journaling(Base):
    def test_a_torn_tail_is_cut_on_open_so_new_events_are_not_glued_to_it(self) -> None:
        os.makedirs(self.journal)
        whole = json.dumps(
            [
                {
                    "specVersion": 1,
                    "eventId": "01900000-0000-7000-8000-000000000001",
                    "type": "step.started",
                    "planId": "old",
                    "sessionId": "s",
                    "seq": 0,
                    "occurredAt": "2024-05-01T12:00:00.000Z",
                    "payload": {"stepId": "a"},
                }
            ]
        )
        with open(os.path.join(self.journal, "journal.jsonl"), "w") as f:
            f.write(whole + "\n" + whole[: len(whole) // 2])  # a kill in the middle of the second write
        port = free_port()
        with self.assertLogs("plan_ledger", "WARNING") as logs:
            c = self.client(f"http://127.0.0.1:{port}", probe_interval=3600)
        self.assertIn("cut", logs.output[0])
        self.assertEqual(c.stats().torn_bytes, len(whole) // 2)
        c.step_started(PLAN, "s1")
        c.close(30)
        self.assertEqual([e["planId"] for e in journal_events(self.journal)], ["old", "plan-sender"])
        server = self.server(port)
        drain = self.client(server.url)
        self.assertTrue(drain.flush(30))
        self.assertEqual(sorted(e["planId"] for e in server.stored()), ["old", "plan-sender"])

    def test_large_batches_come_back_from_the_journal_whole_and_in_order(self) -> None:
        port = free_port()
        c = self.client(f"http://127.0.0.1:{port}", probe_interval=3600, batch_size=50)
        big = "x" * 150_000  # 50 of these make a journal line of about 7.5 MB
        for i in range(120):
            self.assertTrue(c.step_completed(PLAN, f"s{i}", input_tokens=1, output_tokens=1, output_content=big).ok)
        self.assertFalse(c.close(60))
        server = self.server(port)
        drain = self.client(server.url)
        self.assertTrue(drain.flush(60))
        self.assertEqual([e["seq"] for e in server.stored()], list(range(120)))
        self.assertEqual({len(e["payload"]["outputContent"]) for e in server.stored()}, {150_000})

    def test_one_client_per_journal_directory_and_a_journal_full_is_counted(self) -> None:
        c = self.client(
            f"http://127.0.0.1:{free_port()}", max_journal_bytes=2000, probe_interval=3600, journal_commit_ms=10
        )
        from plan_ledger import JournalLockedError

        with self.assertRaises(JournalLockedError):
            PlanLedgerClient(f"http://127.0.0.1:{free_port()}", journal_dir=self.journal)
        for i in range(30):
            c.step_started(PLAN, f"s{i}")
        wait_until("every event journaled or dropped", lambda: c.stats().journaled + c.stats().dropped == 30)
        self.assertGreater(c.stats().dropped, 0)
        self.assertEqual(c.stats().lost, 0)


class Stats(Base):
    def test_every_way_out_is_counted(self) -> None:
        server = self.server()
        c = self.client(server.url, max_buffered=3, probe_interval=3600, max_backoff=3600)
        c._reachable = False
        c._next_probe = time.monotonic() + 3600
        results = [c.step_started(PLAN, f"s{i}") for i in range(5)]
        self.assertEqual([r.reason for r in results], [None, None, None, "dropped", "dropped"])
        self.assertEqual([r.seq for r in results], [0, 1, 2, None, None])  # a dropped event takes no seq
        c.step_completed(PLAN, "x", input_tokens=-1, output_tokens=0)
        c.checkpoint_saved(PLAN, "cp", 0, {"x": object()})
        self.assertTrue(c.flush(30))
        c.close(5)
        self.assertEqual(c.step_started(PLAN, "late").reason, "closed")
        s = c.stats()
        self.assertEqual(
            (s.accepted, s.dropped, s.invalid, s.unencodable, s.closed, s.lost, s.sender_errors), (3, 2, 1, 1, 1, 0, 0)
        )


class ReadYourWrites(Base):
    def test_flush_stored_waits_until_the_worker_applied_the_events(self) -> None:
        server = self.server()
        applied = set()
        asked = []

        def status(ids):
            asked.append(list(ids))
            stored = {e["eventId"] for e in server.stored()}
            answer = {
                "applied": [i for i in ids if i in applied],
                "waiting": [i for i in ids if i in stored and i not in applied],
                "refused": [],
                "unknown": [i for i in ids if i not in stored],
            }
            applied.update(stored)  # applied by the next question
            return answer

        server.status_answer = status
        c = self.client(server.url)
        ids = [c.step_started(PLAN, f"s{i}").event_id for i in range(5)]
        self.assertTrue(c.flush(30, stored=True))
        self.assertEqual(sorted(asked[0]), sorted(ids))
        self.assertGreaterEqual(len(asked), 2)
        s = c.stats()
        self.assertEqual((s.confirmed, s.unconfirmed), (5, 0))
        self.assertTrue(c.flush(30, stored=True))  # nothing left to confirm

    def test_the_ids_kept_are_bounded(self) -> None:
        server = self.server()
        c = self.client(server.url, max_unconfirmed=3)
        for i in range(5):
            c.step_started(PLAN, f"s{i}")
        self.assertTrue(c.flush(30))
        s = c.stats()
        self.assertEqual((s.unconfirmed, s.untracked), (3, 2))

    def test_a_server_without_the_status_route_says_so(self) -> None:
        server = self.server()
        c = self.client(server.url)
        c.step_started(PLAN, "s1")
        self.assertTrue(c.flush(30))
        real_request = c._request

        def older_server(method, path, *args, **kwargs):
            if path == "/v1/events/status":
                raise NotFound(404, "Route POST:/v1/events/status not found")
            return real_request(method, path, *args, **kwargs)

        c._request = older_server  # type: ignore[method-assign]
        with self.assertRaisesRegex(PlanLedgerError, "no POST /v1/events/status"):
            c.flush(5, stored=True)


class Reads(Base):
    def test_typed_results_keep_dict_access(self) -> None:
        server = self.server()
        active = {
            "sessionId": "s1",
            "activePlan": {
                "planId": "p1",
                "sessionId": "s1",
                "query": "q",
                "status": "executing",
                "approvalStatus": None,
                "requiresApproval": False,
                "complexity": None,
                "totalSteps": 2,
                "completedSteps": 1,
                "failedSteps": 0,
                "skippedSteps": 0,
                "inputTokens": 10,
                "outputTokens": 5,
                "createdAt": "2024-05-01T12:00:00.000Z",
                "completedAt": None,
                "durationMs": None,
                "summary": None,
                "failureReason": None,
                "steps": [{"stepId": "a", "index": 0, "title": None, "agentId": "x", "status": "completed"}],
                "nextSeq": 3,
            },
            "otherActivePlanIds": [],
        }
        server.routes["/v1/sessions/s1/active"] = (200, active)
        server.routes["/v1/plans?"] = (
            200,
            {"total": 1, "limit": 20, "offset": 0, "plans": [dict(active["activePlan"])]},
        )
        server.routes["/v1/plans/p1"] = (
            200,
            {
                "plan": active["activePlan"],
                "steps": [],
                "handoffs": [],
                "checkpoints": [],
                "timeline": [],
                "decisions": [
                    {
                        "decisionId": "d1",
                        "decision": "edit",
                        "decidedBy": "bob",
                        "feedback": None,
                        "editedStepCount": 1,
                        "at": "2024-05-01T12:00:00.000Z",
                        "stepChanges": {
                            "added": [],
                            "removed": [],
                            "changed": ["a"],
                            "replaced": [
                                {
                                    "stepId": "a",
                                    "agentId": "x",
                                    "task": "old",
                                    "title": None,
                                    "expectedOutput": None,
                                    "dependsOn": [],
                                }
                            ],
                        },
                    }
                ],
            },
        )
        c = self.client(server.url, journal_dir=None)
        a = c.active_plan("s1")
        self.assertEqual(
            (a.active_plan.plan_id, a.active_plan.next_seq, a.active_plan.steps[0].step_id), ("p1", 3, "a")
        )
        self.assertEqual((a["activePlan"]["nextSeq"], a["activePlan"]["steps"][0]["status"]), (3, "completed"))
        self.assertEqual(dict(a), active)
        self.assertEqual(c.plans("s1").plans[0].completed_steps, 1)
        d = c.decisions("p1")[0]
        self.assertEqual((d.decision, d.step_changes.changed, d.step_changes.replaced[0].task), ("edit", ["a"], "old"))
        self.assertEqual(d["stepChanges"]["replaced"][0]["task"], "old")
        # a session an older server never saw (404) has no active plan either
        none = c.active_plan("never-seen")
        self.assertIsNone(none.active_plan)
        self.assertIsNone(none["activePlan"])
        with self.assertRaises(NotFound):
            c.plan("nope")


class KeepAlive(Base):
    """A server closes idle connections (its keep-alive timeout): the sender's next request must not
    take that for an outage."""

    def test_a_connection_the_server_closed_while_idle_is_replaced_before_sending(self) -> None:
        server = self.server()
        c = self.client(server.url)
        c.step_started(PLAN, "s1")
        self.assertTrue(c.flush(30))
        server.close_connections()
        time.sleep(0.05)
        c.step_started(PLAN, "s2")
        self.assertTrue(c.flush(30))
        self.assertTrue(c.close(30))
        self.assertEqual([e["seq"] for e in server.stored()], [0, 1])
        self.assertEqual((c.stats().journaled, server.probes), (0, 0))

    def test_a_reused_connection_closed_as_the_request_leaves_is_retried_once_on_a_new_one(self) -> None:
        server = self.server()
        c = self.client(server.url)
        c.step_started(PLAN, "s1")
        self.assertTrue(c.flush(30))
        server.drop_posts = 1  # read, then closed with no answer: what a keep-alive timeout racing the request gives
        c.step_started(PLAN, "s2")
        self.assertTrue(c.flush(30))
        self.assertEqual([e["seq"] for e in server.stored()], [0, 1])
        self.assertEqual((server.posts, c.stats().journaled, server.probes), (3, 0, 0))

    def test_a_new_connection_closed_too_is_an_outage_the_journal_covers(self) -> None:
        server = self.server()
        c = self.client(server.url, probe_interval=0.05)
        c.step_started(PLAN, "s1")
        self.assertTrue(c.flush(30))
        server.drop_posts = 2  # the reused connection, then the new one
        c.step_started(PLAN, "s2")
        self.assertTrue(c.flush(30))
        self.assertEqual([e["seq"] for e in server.stored()], [0, 1])
        self.assertEqual(c.stats().journaled, 1)
        self.assertGreaterEqual(server.probes, 1)


class Fork(Base):
    @unittest.skipUnless(hasattr(os, "fork"), "needs os.fork")
    def test_the_sender_imports_nothing_so_a_fork_cannot_catch_an_import_half_done(self) -> None:
        # a fork() while a thread holds a module's import lock leaves the child unable to import it:
        # a codec imported on the sender's first connection ("idna") made children fail every send
        server = self.server()
        script = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from plan_ledger import NotFound, Plan, PlanLedgerClient
before = set(sys.modules)
plan = Plan("plan-imports", "sess")
c = PlanLedgerClient(sys.argv[2], ingest_key="k" * 16, journal_dir=sys.argv[3])
c.step_started(plan, "s1")
assert c.flush(30, stored=True)
try:
    c.plan("nope")
except NotFound:
    pass
down = PlanLedgerClient(
    sys.argv[4], ingest_key="k" * 16, journal_dir=sys.argv[3] + "-down", probe_interval=0.01, journal_commit_ms=1
)
down.step_started(plan, "s2")
while down.stats().journaled < 1:
    time.sleep(0.01)
c.close(30)
down.close(0)
print(json.dumps(sorted(set(sys.modules) - before)))
"""
        client_dir = os.path.join(os.path.dirname(__file__), "..")
        run = subprocess.run(
            [sys.executable, "-c", script, client_dir, server.url, self.journal, f"http://127.0.0.1:{free_port()}"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(json.loads(run.stdout), [])
        self.assertEqual(len(server.stored()), 1)

    @unittest.skipUnless(hasattr(os, "fork"), "needs os.fork")
    def test_a_forked_child_sends_with_its_own_sender_and_the_parents_buffer_stays_the_parents(self) -> None:
        server = self.server()
        c = self.client(server.url)
        c._reachable = False  # the parent's events wait in its memory across the fork
        c._next_probe = time.monotonic() + 3600
        c.step_started(PLAN, "parent-before")
        pid = os.fork()
        if pid == 0:  # the child
            code = 1
            try:
                child = Plan("plan-child", "sess-child")
                ok = c.step_started(child, "c1").ok and c.step_started(child, "c2").ok
                code = 0 if ok and c.flush(30) and c.stats().accepted == 2 else 3
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0)
        self.assertEqual(sorted(e["payload"]["stepId"] for e in server.stored()), ["c1", "c2"])
        self.assertTrue(c.flush(30))
        self.assertEqual(sorted(e["payload"]["stepId"] for e in server.stored()), ["c1", "c2", "parent-before"])
        # the child left through os._exit (no close): its empty journal waits for the parent to adopt it
        c._journal.adopt_forks()
        self.assertNotIn(f"fork-{pid}", os.listdir(self.journal))

    @unittest.skipUnless(hasattr(os, "fork"), "needs os.fork")
    def test_a_childs_journal_is_adopted_by_the_next_client_on_the_directory(self) -> None:
        port = free_port()
        c = self.client(f"http://127.0.0.1:{port}", probe_interval=3600, journal_commit_ms=10)
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                child = Plan("plan-child", "sess-child")
                for i in range(3):
                    c.step_started(child, f"c{i}")
                while c.stats().journaled < 3:
                    time.sleep(0.01)
                code = 0
            finally:
                os._exit(code)  # killed-like: no close
        _, status = os.waitpid(pid, 0)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0)
        self.assertIn(f"fork-{pid}", os.listdir(self.journal))
        c.close(0)
        server = self.server(port)
        with self.assertLogs("plan_ledger", "INFO") as logs:
            drain = self.client(server.url)
        self.assertIn(f"left by process {pid}", "\n".join(logs.output))
        self.assertTrue(drain.flush(30))
        self.assertEqual(sorted(e["payload"]["stepId"] for e in server.stored()), ["c0", "c1", "c2"])
        self.assertNotIn(f"fork-{pid}", os.listdir(self.journal))

    @unittest.skipUnless(hasattr(os, "fork"), "needs os.fork")
    def test_a_multiprocessing_child_that_never_closes_the_client_delivers_at_its_exit(self) -> None:
        import multiprocessing

        server = self.server()
        c = self.client(server.url)

        def child() -> None:
            for i in range(20):
                c.step_started(Plan("plan-mp-child", "sess"), f"s{i}")
            # neither flush nor close: multiprocessing's exit runs the client's close

        process = multiprocessing.get_context("fork").Process(target=child)
        process.start()
        process.join(60)
        self.assertEqual(process.exitcode, 0)
        self.assertEqual(sorted(e["seq"] for e in server.stored()), list(range(20)))


class Lifecycle(Base):
    def test_context_manager_closes(self) -> None:
        server = self.server()
        with PlanLedgerClient(server.url, journal_dir=self.journal) as c:
            c.step_started(PLAN, "s1")
        self.assertEqual(c.step_started(PLAN, "s2").reason, "closed")
        self.assertEqual(len(server.stored()), 1)

    @unittest.skipUnless(threading.current_thread() is threading.main_thread(), "signals need the main thread")
    def test_the_sigterm_handler_closes_then_chains_to_the_previous_one(self) -> None:
        server = self.server()
        c = self.client(server.url)
        seen = []
        previous = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(c.stats().accepted))
        try:
            c.install_sigterm_handler(10)
            c._reachable = False  # held in memory until the close
            c._next_probe = time.monotonic() + 3600
            for i in range(3):
                c.step_started(PLAN, f"s{i}")
            os.kill(os.getpid(), signal.SIGTERM)
            wait_until("the previous handler called", lambda: seen)
            self.assertEqual(seen, [3])  # the close ran first, and delivered
            self.assertEqual(c.step_started(PLAN, "late").reason, "closed")
        finally:
            signal.signal(signal.SIGTERM, previous)


class AsyncClient(Base):
    def test_publish_from_coroutines_then_await_flush_and_reads(self) -> None:
        server = self.server()
        server.routes["/v1/sessions/s1/active"] = (
            200,
            {"sessionId": "s1", "activePlan": None, "otherActivePlanIds": []},
        )

        async def main():
            async with AsyncPlanLedgerClient(server.url, journal_dir=self.journal) as ledger:

                async def task(k):
                    plan = Plan(f"plan-async-{k}", "s1")
                    for i in range(50):
                        self.assertTrue(ledger.step_started(plan, f"s{i}").ok)
                        await asyncio.sleep(0)

                await asyncio.gather(*(task(k) for k in range(4)))
                self.assertTrue(await ledger.flush(30, stored=True))
                self.assertIsNone((await ledger.active_plan("s1")).active_plan)
                return ledger.stats()

        stats = asyncio.run(main())
        self.assertEqual(stats.accepted, 200)
        self.assertEqual(len({e["eventId"] for e in server.stored()}), 200)


if __name__ == "__main__":
    unittest.main()
