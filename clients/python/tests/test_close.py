"""``close()`` is idempotent and SIGTERM-safe. SIGTERM while ``close()`` runs (a container stop while
the client closes): with the handler installed, the process must still end by SIGTERM, and only
after every event was delivered or journaled. The server here accepts connections and never
answers, so nothing can be delivered: all 100 events must be in the journal when the process is
gone. A second close() from another thread waits for the first, or journals what is left itself."""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

CHILD = os.path.join(os.path.dirname(__file__), "_sigterm_child.py")


class SilentServer:
    """Accepts connections and reads what comes, never answers."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.held = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)

    def close(self) -> None:
        self.sock.close()
        for c in self.held:
            c.close()


def journaled_events(directory: str) -> list:
    path = os.path.join(directory, "journal.jsonl")
    if not os.path.exists(path):
        return []
    with open(path, "rb") as f:
        return [e for line in f.read().splitlines() if line for e in json.loads(line)]


class SigtermDuringClose(unittest.TestCase):
    def run_child(self, mode: str) -> None:
        server = SilentServer()
        journal = tempfile.mkdtemp(prefix="plan-ledger-term-")
        try:
            child = subprocess.Popen(
                [sys.executable, CHILD, server.url, journal, mode],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            self.assertEqual(child.stdout.readline().strip(), "closing")
            time.sleep(0.5)  # close(5) is waiting for the server that never answers
            child.send_signal(signal.SIGTERM)
            out, err = child.communicate(timeout=30)
            self.assertEqual(child.returncode, -signal.SIGTERM, f"stdout {out!r} stderr {err!r}")
            self.assertNotIn("closed", out)  # ended by the signal, not by returning
            events = journaled_events(journal)
            self.assertEqual(len(events), 100, err)
            self.assertEqual(sorted(e["seq"] for e in events), list(range(100)))
        finally:
            server.close()

    def test_threaded_client(self) -> None:
        self.run_child("threaded")

    def test_asyncio_client(self) -> None:
        self.run_child("asyncio")


sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from plan_ledger import Plan, PlanLedgerClient  # noqa: E402


class CloseFromTwoThreads(unittest.TestCase):
    def setUp(self) -> None:
        self.server = SilentServer()
        self.journal = tempfile.mkdtemp(prefix="plan-ledger-close-")
        self.client = PlanLedgerClient(self.server.url, journal_dir=self.journal, timeout=30)
        plan = Plan("plan-two", "sess-two")
        for _ in range(100):
            self.client.step_started(plan, "s0")
        self.first: list = []

    def tearDown(self) -> None:
        self.server.close()

    def start_first_close(self, timeout: float) -> threading.Thread:
        t = threading.Thread(target=lambda: self.first.append(self.client.close(timeout)))
        t.start()
        time.sleep(0.3)  # the first close waits for the silent server
        return t

    def test_a_second_close_waits_for_the_running_one_and_returns_its_result(self) -> None:
        t = self.start_first_close(1.0)
        second = self.client.close(30)
        t.join()
        self.assertEqual((self.first, second), ([False], False))
        self.assertEqual(len(journaled_events(self.journal)), 100)

    def test_a_second_close_that_gives_up_journals_what_is_left_before_it_returns(self) -> None:
        t = self.start_first_close(30.0)
        self.assertFalse(self.client.close(0.2))
        # the first close still waits; the second did not leave the events in memory only
        self.assertTrue(t.is_alive())
        self.assertEqual(sorted(e["seq"] for e in journaled_events(self.journal)), list(range(100)))
        self.server.close()  # the request fails: the first close ends now
        t.join(30)
        self.assertEqual(self.first, [False])
        self.assertEqual(len(journaled_events(self.journal)), 100)


if __name__ == "__main__":
    unittest.main()
