"""``PlanLedgerClient``: fire-and-forget publishing to ``plan-ledger serve``, and read helpers.
Standard library only.

The client is made of parts, one module each: ``_events`` (the typed helpers and the stamps),
``_sender`` (the sender thread, batching, back-off, the journal's commit), ``_reads`` (the read
helpers), ``_lifecycle`` (``close()``, the SIGTERM handler, fork and exit); this module holds its
options, ``publish()``, ``flush()`` and ``stats()``.
"""
from __future__ import annotations

import codecs
import logging
import os
import time
import urllib.parse
from typing import Any, List, Mapping, Optional

from ._contract import MAX_EVENT_BYTES, Violation, check_event
from ._events import Clock, JsonObject, Plan, PlanSeqs, PublishResult, StepInput, _EventHelpers, stamp_event
from ._approvals import _Approvals
from ._lifecycle import _LIVE, _Lifecycle
from ._reads import _Reads
from ._sender import Item, Stats, _show
from ._wire import ENCODE_ERRORS, encode, find_unencodable
from .errors import Conflict, NotFound, PlanLedgerError
from .journal import Journal

__all__ = [
    "PlanLedgerClient",
    "Plan",
    "StepInput",
    "PublishResult",
    "Stats",
    "PlanLedgerError",
    "NotFound",
    "Conflict",
    "JsonObject",
    "Item",
]

# socket.getaddrinfo encodes a host name with the "idna" codec, whose module the first lookup imports.
# Looked up here, at import, the sender thread never imports it: a fork() while another thread holds
# that import's module lock would leave the child unable to resolve any host ("unknown encoding: idna").
codecs.lookup("idna")


class PlanLedgerClient(_EventHelpers, _Approvals, _Reads, _Lifecycle):
    """Publishes plan events to ``plan-ledger serve`` without ever blocking the caller.

    ``publish()`` stamps the event (``eventId``, per-plan ``seq``, ``occurredAt``), checks it against
    the contract and encodes it, in the caller's thread, then appends the bytes to a bounded
    in-memory buffer. A background thread, woken by the first event it finds waiting, posts batches
    to ``POST /v1/events``. While the server is unreachable or refusing, memory goes to a journal file
    (``journal_dir``) at least every ``journal_commit_ms``, replayed in order when the server is back
    (probed every ``probe_interval`` seconds), also by the next process on the same directory. At
    exit the buffer is flushed, to the server or to the journal. Only past ``max_buffered`` events in
    memory or ``max_journal_bytes`` on disk are events dropped, each one counted and logged.

    Example::

        url = "http://127.0.0.1:8080"
        with PlanLedgerClient(url, ingest_key=KEY, read_key=RKEY, journal_dir="./journal") as ledger:
            plan = Plan("plan_42", "session_7")
            step = {"step_id": "s1", "index": 0, "agent_id": "writer", "task": "Summarise"}
            ledger.plan_created(plan, query="Summarise", steps=[step])
            ledger.step_completed(plan, step_id="s1", input_tokens=812, output_tokens=240, output_content="# Summary")
    """

    def __init__(
        self,
        base_url: str,
        ingest_key: Optional[str] = None,
        read_key: Optional[str] = None,
        journal_dir: Optional[str] = "./plan-ledger-journal",
        max_buffered: int = 100_000,
        batch_size: int = 500,
        max_journal_bytes: int = 1 << 30,
        timeout: float = 10.0,
        max_backoff: float = 30.0,
        exit_timeout: float = 5.0,
        journal_commit_ms: float = 100,
        probe_interval: float = 1.0,
        max_unconfirmed: int = 100_000,
        max_tracked_plans: int = 100_000,
        admin_key: Optional[str] = None,
    ) -> None:
        """``journal_dir=None`` keeps no journal: while the server is down, events wait in memory only.
        ``admin_key`` (``HTTP_ADMIN_KEYS``) is needed by ``fork_plan`` and ``replay_plan``; it reads too."""
        url = urllib.parse.urlsplit(base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"base_url must be http(s)://host:port, got {base_url!r}")
        bad = [
            name
            for name, value, low in (
                ("max_buffered", max_buffered, 1),
                ("batch_size", batch_size, 1),
                ("max_journal_bytes", max_journal_bytes, 1),
                ("timeout", timeout, 0.001),
                ("max_backoff", max_backoff, 0.001),
                ("exit_timeout", exit_timeout, 0),
                ("journal_commit_ms", journal_commit_ms, 1),
                ("probe_interval", probe_interval, 0.001),
                ("max_unconfirmed", max_unconfirmed, 0),
                ("max_tracked_plans", max_tracked_plans, 1),
            )
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value < low
        ]
        if bad:
            raise ValueError(f"plan-ledger client options out of range: {', '.join(bad)}")
        self._url = url
        self._ingest_key = ingest_key
        self._read_key = read_key
        self._admin_key = admin_key
        self._max_buffered = max_buffered
        self._batch_size = batch_size
        self._max_journal_bytes = max_journal_bytes
        self._timeout = timeout
        self._max_backoff = max_backoff
        self._exit_timeout = exit_timeout
        self._commit_s = journal_commit_ms / 1000.0
        self._probe_interval = probe_interval
        self._max_unconfirmed = max_unconfirmed
        self._journal_root = os.path.abspath(journal_dir) if journal_dir else None
        self._journal = Journal(journal_dir, max_journal_bytes) if journal_dir else None
        self._seqs = PlanSeqs(max_tracked_plans)
        self._clock = Clock()
        self._closed = False
        self._close_result: Optional[bool] = None
        self._fork_pending = False
        self._last_log = {}
        self._init_runtime()
        if self._journal is not None:
            self._stats.torn_bytes = self._journal.torn_bytes
            self._adopt_unconfirmed(self._journal)
        self._start_sender()
        _LIVE.add(self)

    # ---------------------------------------------------------------- context manager

    def __enter__(self) -> "PlanLedgerClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close(self._exit_timeout)

    # ---------------------------------------------------------------- publishing

    def publish(self, event: Mapping[str, Any]) -> PublishResult:
        """Stamps, checks, encodes and queues one event; never blocks on the network or the disk, never raises.

        Stamps left out are filled in: ``specVersion``, ``eventId`` (a time-ordered uuid7), ``seq`` (the plan's next:
        0, 1, 2, ... in this process, or from ``continue_plan``) and ``occurredAt`` (now, UTC). The event is
        checked against the contract's schema rules and encoded (strict JSON, UTF-8) before its seq is
        taken: an event that fails either is refused here (``reason="invalid"``, ``violations`` naming the
        fields) and its plan's next event takes the seq it would have had. The event is copied: changing
        it afterwards changes nothing.
        """
        if self._fork_pending:
            self._setup_in_child()
        try:
            e = dict(event)
        except (TypeError, ValueError):
            with self._count_lock:
                self._stats.invalid += 1
            return PublishResult(
                False,
                None,
                None,
                "invalid",
                (
                    Violation(
                        "", f"(root) must be an object (a mapping of the event's fields), got {type(event).__name__}"
                    ),
                ),
            )
        all_own = stamp_event(e, self._clock)
        event_id = e["eventId"]
        if self._closed:
            with self._count_lock:
                self._stats.closed += 1
            return PublishResult(False, event_id, None, "closed")
        plan_id = e.get("planId")
        stamp = "seq" not in e
        if stamp:
            e["seq"] = self._seqs.next(plan_id)  # provisional: taken below if valid
        violations = check_event(e, all_own)
        if violations:
            return self._refuse(e, violations)
        try:
            data = encode(e)
        except ENCODE_ERRORS as err:
            return self._refuse(e, find_unencodable(e) or [Violation("", f"(root): {err}", True)])
        if len(data) > MAX_EVENT_BYTES:
            return self._refuse(
                e, [Violation("", f"(root) is {len(data)} bytes of JSON, more than the contract's {MAX_EVENT_BYTES}")]
            )
        if len(self._buffer) >= self._max_buffered:
            self._drop(1, "the in-memory buffer is full (max_buffered)")
            return PublishResult(False, event_id, None, "dropped")
        with self._seq_lock:
            if stamp:
                seq = self._seqs.next(plan_id)
                if seq != e["seq"]:  # another thread took this seq meanwhile
                    e["seq"] = seq
                    data = encode(e)
            else:
                seq = e["seq"]
            self._seqs.take(plan_id, seq, e["type"])  # type: ignore[arg-type]
            self._buffer.append((event_id, data))
        if self._sleeping:
            self._wake.set()
        return PublishResult(True, event_id, seq)

    def _refuse(self, e: JsonObject, violations: List[Violation]) -> PublishResult:
        with self._count_lock:
            if any(v.unencodable for v in violations):
                self._stats.unencodable += 1
            else:
                self._stats.invalid += 1
        self._log_rarely(
            "invalid",
            logging.WARNING,
            "plan-ledger refused an event at publish(): %s of plan %s: %s (it took no seq; refused at the call so "
            "far: %d)",
            _show(e.get("type")),
            _show(e.get("planId")),
            "; ".join(v.message for v in violations[:5]),
            self._stats.invalid + self._stats.unencodable,
        )
        event_id = e.get("eventId")
        return PublishResult(False, event_id if isinstance(event_id, str) else None, None, "invalid", tuple(violations))

    def continue_plan(self, plan_id: str, next_seq: int) -> None:
        """A plan started by an earlier process continues from ``next_seq`` (a resume point's ``next_seq``)."""
        if not isinstance(next_seq, int) or isinstance(next_seq, bool) or next_seq < 0:
            raise ValueError(f"next_seq must be a non-negative integer, got {next_seq!r}")
        with self._seq_lock:
            self._seqs.continue_from(plan_id, next_seq)

    def flush(self, timeout: float = 10.0, stored: bool = False) -> bool:
        """Waits until every event published so far reached the server (or, with ``stored=True``, was
        applied by its worker or refused by it: what a read then shows); False at the timeout.

        ``stored=True`` asks ``POST /v1/events/status`` about the events this client delivered and
        still tracks (the last ``max_unconfirmed``); it raises ``PlanLedgerError`` when the server
        does not have that route."""
        if self._fork_pending:
            self._setup_in_child()
        deadline = time.monotonic() + timeout
        self._retry_now = True
        self._wake.set()
        while not self._drained():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.002)
        if not stored:
            return True
        return self._wait_stored(deadline)

    def _drained(self) -> bool:
        return not self._buffer and self._in_hand is None and not (self._journal is not None and self._journal.backlog)

    def stats(self) -> Stats:
        s = self._stats
        j = self._journal
        return Stats(
            s.published,
            s.accepted,
            s.rejected,
            len(self._buffer) + len(self._in_hand or ()),
            s.journaled,
            j.backlog if j is not None else 0,
            s.dropped,
            s.invalid,
            s.unencodable,
            s.closed,
            s.lost,
            s.sender_errors,
            s.dead_lettered,
            s.confirmed,
            len(self._unconfirmed),
            s.untracked,
            s.torn_bytes,
        )
