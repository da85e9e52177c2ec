"""Fire-and-forget publishing to ``plan-ledger serve``, and read helpers. Standard library only."""
from __future__ import annotations

import atexit
import codecs
import collections
import datetime
import http.client
import json
import logging
import os
import random
import re
import select
import signal
import threading
import time
import urllib.parse
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Deque, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from ._contract import MAX_EVENT_BYTES, SPEC_VERSION, Violation, check_event
from ._wire import ENCODE_ERRORS, encode, find_unencodable
from .journal import FORK_PREFIX, Journal
from .results import (
    Decision,
    EventStatus,
    ForkOutcome,
    PlanLineage,
    PlanPage,
    PlanTimeline,
    ResumePoint,
    SessionActivePlan,
    SessionHistory,
)

log = logging.getLogger("plan_ledger")

# socket.getaddrinfo encodes a host name with the "idna" codec, whose module the first lookup imports.
# Looked up here, at import, the sender thread never imports it: a fork() while another thread holds
# that import's module lock would leave the child unable to resolve any host ("unknown encoding: idna").
codecs.lookup("idna")

JsonObject = Dict[str, Any]
Item = Tuple[Optional[str], bytes]  # (eventId, the event's JSON bytes)

_BATCH_BYTES = 8 << 20  # below the server's default 16 MiB body limit
_STATUS_IDS = 10_000  # most ids one POST /v1/events/status takes
_FAST_202 = re.compile(rb'\{"accepted":(\d+),"invalid":0,"dropped":0,').match


class PlanLedgerError(Exception):
    """A read failed: ``status`` is the HTTP status (0: the server could not be reached)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}" if status else message)
        self.status = status
        self.message = message


class NotFound(PlanLedgerError):
    """404: the plan, session or step does not exist (or has no stored output)."""


class Conflict(PlanLedgerError):
    """409: refused for what is stored: a fork's new plan id is taken, or its start or edits do not fit the parent."""


_ERRORS = {404: NotFound, 409: Conflict}


@dataclass(frozen=True)
class PublishResult:
    """What ``publish()`` says at once.

    ``ok`` True: the event is queued (memory, then the server or the journal) with ``event_id`` and
    ``seq``. ``ok`` False, ``reason``:

    - ``invalid``: the contract refuses it, or it holds a value JSON cannot (``violations`` name each
      field); it takes no seq, so its plan's later events are not held back;
    - ``dropped``: the in-memory buffer is full (``max_buffered``); it takes no seq;
    - ``closed``: published after ``close()``.
    """

    ok: bool
    event_id: Optional[str]
    seq: Optional[int]
    reason: Optional[str] = None
    violations: Tuple[Violation, ...] = ()


@dataclass(frozen=True)
class Plan:
    """The plan an event belongs to, as the typed helpers take it."""

    plan_id: str
    session_id: str


@dataclass
class Stats:
    """Counters since the client was created (in a forked child: since the fork), and what it holds now.

    Every event ``publish()`` took is, in the end, ``accepted`` by the server or counted in exactly one
    of ``rejected``, ``dropped`` or ``lost``; events refused at the call are ``invalid``,
    ``unencodable`` or ``closed`` (they take no seq)."""

    published: int = 0  # events the server answered for (accepted or invalid)
    accepted: int = 0
    rejected: int = 0  # events the server found invalid (logged with their type, plan, seq, id and violations)
    buffered: int = 0  # events in memory now (queued or being sent)
    journaled: int = 0  # events written to the journal since start
    journal_bytes: int = 0  # undelivered bytes in the journal now
    dropped: int = 0  # events lost past the buffer or journal bound, or to a failed journal write (each logged)
    invalid: int = 0  # refused at the call: the contract (the schema's rules) refuses them
    unencodable: int = 0  # refused at the call: not strict JSON / UTF-8 (NaN, lone surrogate, datetime, set, ...)
    closed: int = 0  # refused at the call: published after close()
    lost: int = 0  # lost to an internal error of the client (logged; should stay 0)
    sender_errors: int = 0  # unexpected errors the sender thread survived (logged)
    dead_lettered: int = 0  # accepted by the server, then refused by its worker (seen by flush(stored=True))
    confirmed: int = 0  # events flush(stored=True) saw applied
    unconfirmed: int = 0  # ids of delivered events kept for flush(stored=True) now (at most max_unconfirmed)
    untracked: int = 0  # delivered ids forgotten past max_unconfirmed (flush(stored=True) no longer waits for them)
    torn_bytes: int = 0  # journal bytes cut on open (a torn last line) or skipped as unreadable


_LIVE: "weakref.WeakSet[PlanLedgerClient]" = weakref.WeakSet()

# errors of a request whose connection the server had closed (RemoteDisconnected is a ConnectionResetError)
_PEER_CLOSED = (ConnectionResetError, ConnectionAbortedError, BrokenPipeError)


def _closed_by_peer(conn: http.client.HTTPConnection) -> bool:
    """True when an idle kept-alive connection cannot be reused: readable while no request is out means
    the server closed it (its keep-alive timeout) or sent what nobody asked for."""
    sock = conn.sock
    if sock is None:
        return False  # http.client opens a new one for the next request
    try:
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(sock, select.POLLIN)
            return bool(poller.poll(0))
        return bool(select.select([sock], [], [], 0)[0])
    except (OSError, ValueError):
        return True


def _joined(thread: threading.Thread, seconds: float) -> bool:
    thread.join(seconds)
    return not thread.is_alive()


def _close_all_at_exit() -> None:
    for client in list(_LIVE):
        try:
            client.close(client._exit_timeout)
        except Exception:  # pragma: no cover - the exit must go on
            log.exception("plan-ledger: close at exit failed")


def _after_fork_in_child() -> None:
    for client in list(_LIVE):
        client._after_fork_in_child()


# threading's exit hook runs at a normal exit and also in multiprocessing's forked children
# (which leave through os._exit, skipping atexit); atexit covers interpreters without it.
atexit.register(_close_all_at_exit)
if hasattr(threading, "_register_atexit"):
    try:
        threading._register_atexit(_close_all_at_exit)  # type: ignore[attr-defined]
    except RuntimeError:  # pragma: no cover - imported during interpreter shutdown
        pass
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


_STEP_KEYS = {"step_id": "stepId", "agent_id": "agentId", "expected_output": "expectedOutput", "depends_on": "dependsOn"}


def _step_dict(step: Any) -> Any:
    """A step spec in the contract's camelCase: ``step_id`` -> ``stepId`` and so on; None values left out.
    A key given in both spellings keeps its snake_case twin, which the contract then refuses."""
    if isinstance(step, StepInput):
        step = step.as_dict()
    if not isinstance(step, Mapping):
        return step
    out: JsonObject = {}
    for key, value in step.items():
        if value is None:
            continue
        camel = _STEP_KEYS.get(key, key) if isinstance(key, str) else key
        if camel != key and (camel in step or camel in out):
            camel = key
        out[camel] = list(value) if camel == "dependsOn" and isinstance(value, (tuple, list)) else value
    return out


def _steps(steps: Optional[Iterable[Any]]) -> Optional[List[Any]]:
    if steps is None:
        return None
    if isinstance(steps, (str, bytes, Mapping)) or not isinstance(steps, Iterable):
        return steps  # type: ignore[return-value]  # the contract says what is wrong with it
    return [_step_dict(s) for s in steps]


@dataclass(frozen=True)
class StepInput:
    """A step spec for ``plan_created`` / ``plan_decision`` (dicts in camelCase or snake_case work too)."""

    step_id: str
    index: int
    agent_id: str
    task: str
    title: Optional[str] = None
    expected_output: Optional[str] = None
    depends_on: Optional[Sequence[str]] = None

    def as_dict(self) -> JsonObject:
        out: JsonObject = {"stepId": self.step_id, "index": self.index, "agentId": self.agent_id, "task": self.task}
        if self.title is not None:
            out["title"] = self.title
        if self.expected_output is not None:
            out["expectedOutput"] = self.expected_output
        if self.depends_on is not None:
            out["dependsOn"] = list(self.depends_on)
        return out


class _EventHelpers:
    """The typed helpers, shared by the threaded and the asyncio client: each builds one event and publishes it."""

    def publish(self, event: Mapping[str, Any]) -> PublishResult:  # pragma: no cover - overridden
        raise NotImplementedError

    def _typed(self, type_: str, plan: Plan, payload: JsonObject, seq: Optional[int], event_id: Optional[str]) -> PublishResult:
        event: JsonObject = {"type": type_, "planId": plan.plan_id, "sessionId": plan.session_id, "payload": {k: v for k, v in payload.items() if v is not None}}
        if seq is not None:
            event["seq"] = seq
        if event_id is not None:
            event["eventId"] = event_id
        return self.publish(event)

    def plan_created(self, plan: Plan, query: str, steps: Iterable[Any], requires_approval: Optional[bool] = None, complexity: Optional[int] = None, seq: Optional[int] = None, event_id: Optional[str] = None) -> PublishResult:
        """``steps``: ``StepInput`` or dicts ``{"stepId", "index", "agentId", "task", "title"?, "expectedOutput"?, "dependsOn"?}``
        (snake_case keys such as ``step_id``, ``agent_id``, ``depends_on`` are accepted too)."""
        return self._typed("plan.created", plan, {"query": query, "steps": _steps(steps), "requiresApproval": requires_approval, "complexity": complexity}, seq, event_id)

    def plan_decision(self, plan: Plan, decision: str, steps: Optional[Iterable[Any]] = None, feedback: Optional[str] = None, decided_by: Optional[str] = None, seq: Optional[int] = None, event_id: Optional[str] = None) -> PublishResult:
        """``decision``: approve | edit (with the full new ``steps``) | reject."""
        return self._typed("plan.decision", plan, {"decision": decision, "steps": _steps(steps), "feedback": feedback, "decidedBy": decided_by}, seq, event_id)

    def step_started(self, plan: Plan, step_id: str, agent_id: Optional[str] = None, seq: Optional[int] = None) -> PublishResult:
        return self._typed("step.started", plan, {"stepId": step_id, "agentId": agent_id}, seq, None)

    def step_completed(self, plan: Plan, step_id: str, input_tokens: int, output_tokens: int, result: Optional[str] = None, output_content: Optional[str] = None, model: Optional[str] = None, seq: Optional[int] = None, *, provider: Optional[str] = None, cache_read_tokens: Optional[int] = None, cache_write_tokens: Optional[int] = None, reasoning_tokens: Optional[int] = None, reported_cost: Optional[str] = None) -> PublishResult:
        """``input_tokens`` counts cache reads and writes too, ``output_tokens`` reasoning too; ``reported_cost``
        (USD, a decimal string such as ``"0.0123"``) is the provider's own figure and wins over any price."""
        payload = {"stepId": step_id, "inputTokens": input_tokens, "outputTokens": output_tokens, "result": result, "outputContent": output_content, "model": model}
        return self._typed("step.completed", plan, {**payload, **_usage(provider, cache_read_tokens, cache_write_tokens, reasoning_tokens, reported_cost)}, seq, None)

    def step_failed(self, plan: Plan, step_id: str, error: str, input_tokens: Optional[int] = None, output_tokens: Optional[int] = None, model: Optional[str] = None, seq: Optional[int] = None, *, provider: Optional[str] = None, cache_read_tokens: Optional[int] = None, cache_write_tokens: Optional[int] = None, reasoning_tokens: Optional[int] = None, reported_cost: Optional[str] = None) -> PublishResult:
        payload = {"stepId": step_id, "error": error, "inputTokens": input_tokens, "outputTokens": output_tokens, "model": model}
        return self._typed("step.failed", plan, {**payload, **_usage(provider, cache_read_tokens, cache_write_tokens, reasoning_tokens, reported_cost)}, seq, None)

    def step_skipped(self, plan: Plan, step_id: str, reason: Optional[str] = None, seq: Optional[int] = None) -> PublishResult:
        return self._typed("step.skipped", plan, {"stepId": step_id, "reason": reason}, seq, None)

    def handoff_recorded(self, plan: Plan, handoff_id: str, from_agent_id: str, to_agent_id: str, reason: str, step_id: Optional[str] = None, explanation: Optional[str] = None, seq: Optional[int] = None) -> PublishResult:
        return self._typed("handoff.recorded", plan, {"handoffId": handoff_id, "fromAgentId": from_agent_id, "toAgentId": to_agent_id, "reason": reason, "stepId": step_id, "explanation": explanation}, seq, None)

    def checkpoint_saved(self, plan: Plan, checkpoint_id: str, layer: int, state: JsonObject, seq: Optional[int] = None) -> PublishResult:
        return self._typed("checkpoint.saved", plan, {"checkpointId": checkpoint_id, "layer": layer, "state": state}, seq, None)

    def plan_finalized(self, plan: Plan, status: str, summary: Optional[str] = None, failure_reason: Optional[str] = None, seq: Optional[int] = None) -> PublishResult:
        """``status``: completed | failed | cancelled."""
        return self._typed("plan.finalized", plan, {"status": status, "summary": summary, "failureReason": failure_reason}, seq, None)


class PlanLedgerClient(_EventHelpers):
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

        with PlanLedgerClient("http://127.0.0.1:8080", ingest_key=KEY, read_key=RKEY, journal_dir="./journal") as ledger:
            plan = Plan("plan_42", "session_7")
            ledger.plan_created(plan, query="Summarise", steps=[{"step_id": "s1", "index": 0, "agent_id": "writer", "task": "Summarise"}])
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
        self._max_tracked_plans = max_tracked_plans
        self._journal_root = os.path.abspath(journal_dir) if journal_dir else None
        self._journal = Journal(journal_dir, max_journal_bytes) if journal_dir else None
        self._seq: Dict[str, int] = {}
        self._last_plan: Optional[str] = None
        self._clock: Tuple[int, str] = (-1, "")
        self._closed = False
        self._close_result: Optional[bool] = None
        self._fork_pending = False
        self._last_log: Dict[str, float] = {}
        self._init_runtime()
        if self._journal is not None:
            self._stats.torn_bytes = self._journal.torn_bytes
            self._adopt_unconfirmed(self._journal)
        self._start_sender()
        _LIVE.add(self)

    def _init_runtime(self) -> None:
        """What a forked child must not share with its parent: locks, buffer, sender state, counters."""
        self._seq_lock = threading.Lock()
        # re-entrant: a signal handler's close() may run while this thread holds one of them
        self._count_lock = threading.RLock()  # counters that more than one thread moves
        self._hand_lock = threading.Lock()
        self._leftover_lock = threading.Lock()
        self._track_lock = threading.RLock()
        self._setup_lock = threading.RLock()
        self._wake = threading.Event()
        self._close_done = threading.Event()  # the sender has nothing left it can deliver
        self._close_finished = threading.Event()  # close() is done (its result is set)
        self._close_thread: Optional[int] = None
        self._close_deadline = 0.0
        self._after_close: Optional[Callable[[], None]] = None
        self._buffer: Deque[Item] = collections.deque()
        self._in_hand: Optional[List[Item]] = None  # events out of the buffer, not yet delivered nor journaled
        self._abandoned = False
        self._unconfirmed: Dict[str, None] = {}
        self._stats = Stats()
        self._conn: Optional[http.client.HTTPConnection] = None
        self._sleeping = False
        self._retry_now = False
        self._closing = False
        self._stopping = False
        self._reachable = True
        self._next_probe = 0.0
        self._next_post = 0.0
        self._backoff = 0.0
        self._last_commit = time.monotonic()
        self._next_adopt = time.monotonic() + 30.0
        self._thread: Optional[threading.Thread] = None

    def _start_sender(self) -> None:
        self._thread = threading.Thread(target=self._run, name="plan-ledger-sender", daemon=True)
        self._thread.start()

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
            return PublishResult(False, None, None, "invalid", (Violation("", f"(root) must be an object (a mapping of the event's fields), got {type(event).__name__}"),))
        own = 0
        if "specVersion" not in e:
            e["specVersion"] = SPEC_VERSION
            own += 1
        if "eventId" not in e:
            e["eventId"] = _uuid7()
            own += 1
        if "occurredAt" not in e:
            e["occurredAt"] = self._now()
            own += 1
        event_id = e["eventId"]
        if self._closed:
            with self._count_lock:
                self._stats.closed += 1
            return PublishResult(False, event_id, None, "closed")
        plan_id = e.get("planId")
        stamp = "seq" not in e
        if stamp:
            e["seq"] = self._seq.get(plan_id, 0) if type(plan_id) is str else 0  # provisional: taken below if valid
        violations = check_event(e, own == 3)
        if violations:
            return self._refuse(e, violations)
        try:
            data = encode(e)
        except ENCODE_ERRORS as err:
            return self._refuse(e, find_unencodable(e) or [Violation("", f"(root): {err}", True)])
        if len(data) > MAX_EVENT_BYTES:
            return self._refuse(e, [Violation("", f"(root) is {len(data)} bytes of JSON, more than the contract's {MAX_EVENT_BYTES}")])
        if len(self._buffer) >= self._max_buffered:
            self._drop(1, "the in-memory buffer is full (max_buffered)")
            return PublishResult(False, event_id, None, "dropped")
        with self._seq_lock:
            if stamp:
                seq = self._seq.get(plan_id, 0)  # type: ignore[arg-type]
                if seq != e["seq"]:  # another thread took this seq meanwhile
                    e["seq"] = seq
                    data = encode(e)
            else:
                seq = e["seq"]
            self._take_seq(plan_id, seq, e["type"])  # type: ignore[arg-type]
            self._buffer.append((event_id, data))
        if self._sleeping:
            self._wake.set()
        return PublishResult(True, event_id, seq)

    def _take_seq(self, plan_id: str, seq: Any, type_: str) -> None:
        """The event was accepted: its seq is taken. A finished plan is forgotten; past
        ``max_tracked_plans`` the least recently used plan is."""
        after = int(seq) + 1
        counters = self._seq
        if type_ == "plan.finalized":
            counters.pop(plan_id, None)
            self._last_plan = None
        elif plan_id == self._last_plan:
            if counters.get(plan_id, 0) < after:
                counters[plan_id] = after
        else:
            counters[plan_id] = max(counters.pop(plan_id, 0), after)  # re-inserted: dict order is the LRU order
            self._last_plan = plan_id
            if len(counters) > self._max_tracked_plans:
                del counters[next(iter(counters))]

    def _refuse(self, e: JsonObject, violations: List[Violation]) -> PublishResult:
        with self._count_lock:
            if any(v.unencodable for v in violations):
                self._stats.unencodable += 1
            else:
                self._stats.invalid += 1
        self._log_rarely(
            "invalid",
            logging.WARNING,
            "plan-ledger refused an event at publish(): %s of plan %s: %s (it took no seq; refused at the call so far: %d)",
            _show(e.get("type")),
            _show(e.get("planId")),
            "; ".join(v.message for v in violations[:5]),
            self._stats.invalid + self._stats.unencodable,
        )
        event_id = e.get("eventId")
        return PublishResult(False, event_id if isinstance(event_id, str) else None, None, "invalid", tuple(violations))

    def _now(self) -> str:
        """ISO-8601 UTC with milliseconds; the text is reused within one millisecond (formatting costs more than reading the clock)."""
        ms = time.time_ns() // 1_000_000
        clock = self._clock
        if ms != clock[0]:
            clock = (ms, datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z"))
            self._clock = clock
        return clock[1]

    def continue_plan(self, plan_id: str, next_seq: int) -> None:
        """A plan started by an earlier process continues from ``next_seq`` (a resume point's ``next_seq``)."""
        if not isinstance(next_seq, int) or isinstance(next_seq, bool) or next_seq < 0:
            raise ValueError(f"next_seq must be a non-negative integer, got {next_seq!r}")
        with self._seq_lock:
            self._seq[plan_id] = max(self._seq.pop(plan_id, 0), next_seq)
            self._last_plan = plan_id

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

    def close(self, timeout: float = 5.0) -> bool:
        """Stops accepting events, delivers what it can within ``timeout`` and journals the rest.
        With the server unreachable it returns as soon as memory is in the journal. True when
        everything was delivered.

        Idempotent, from any thread, ``atexit``, ``with`` or a signal handler: a later call waits for
        the running close within its own ``timeout`` (which also shortens the running close's
        deadline) and returns its result; a call that gives up waiting first writes to the journal
        what is still only in memory, so nothing depends on the running close finishing. The ids of
        delivered events whose storage was not yet confirmed are kept with the journal: the next
        client on ``journal_dir`` waits for them in ``flush(stored=True)``."""
        me = threading.get_ident()
        with self._setup_lock:
            running = self._closed
            if not running:
                self._closed = True
                self._close_thread = me
                self._close_deadline = time.monotonic() + max(timeout, 0.0)
        if running:
            return self._close_again(timeout, me)
        try:
            return self._close_first()
        finally:
            if not self._close_finished.is_set():  # the close failed: later calls must not wait for it
                self._close_finished_with(False)
            after, self._after_close = self._after_close, None
            if after is not None:
                after()

    def _close_first(self) -> bool:
        _LIVE.discard(self)
        if self._fork_pending:  # a forked child that never used the client
            return self._close_finished_with(True)
        self._closing = True
        self._retry_now = True
        self._wake.set()
        self._wait_for_close(lambda: self._close_done.wait(0.05))
        self._stopping = True
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(0.05)  # a sender between two steps stops at once
            self._wait_for_close(lambda: _joined(thread, 0.05))
        nothing_left = self._journal_leftovers()
        journal = self._journal
        delivered = nothing_left and not (journal is not None and journal.backlog)
        if journal is not None:
            self._save_unconfirmed(journal)
            journal.close(remove_if_empty=os.path.basename(journal.directory).startswith(FORK_PREFIX))
        conn, self._conn = self._conn, None
        if conn is not None and (thread is None or not thread.is_alive()):
            conn.close()
        return self._close_finished_with(delivered)

    def _wait_for_close(self, step: Callable[[], bool]) -> None:
        """Runs ``step`` (a wait of at most 50 ms; True: done) until it is done or the close's deadline
        passes; the deadline is read at each turn, since a later close() may shorten it."""
        while not step():
            if time.monotonic() >= self._close_deadline:
                return

    def _close_finished_with(self, result: bool) -> bool:
        self._close_result = result
        self._close_finished.set()
        return result

    def _close_again(self, timeout: float, me: int) -> bool:
        """A close() while another runs: see ``close``."""
        if self._close_finished.is_set():
            return bool(self._close_result)
        deadline = time.monotonic() + max(timeout, 0.0)
        with self._setup_lock:
            self._close_deadline = min(self._close_deadline, deadline)
        if self._close_thread == me:
            return False  # called from within the running close (a signal handler): it ends when that one does
        if self._close_finished.wait(max(deadline - time.monotonic(), 0.0)):
            return bool(self._close_result)
        # gave up waiting: what is still only in memory goes to the journal now, from this thread
        self._journal_leftovers(lock_wait=1.0)
        return False

    def _journal_leftovers(self, lock_wait: float = -1) -> bool:
        """Takes what the sender holds (even in the middle of a request) and what memory holds, and
        journals it (without a journal: counts it dropped). One closer at a time. True when nothing
        was left."""
        if not self._leftover_lock.acquire(timeout=lock_wait):
            return False
        try:
            with self._hand_lock:  # a sender still stuck in a request gives its batch up to us
                left: List[Item] = list(self._in_hand or ())
                self._in_hand = None
                self._abandoned = True
            while self._buffer:
                try:
                    left.append(self._buffer.popleft())
                except IndexError:
                    break
            if left:
                if self._journal is not None:
                    self._keep_in_journal(left)
                else:
                    self._drop(len(left), "not delivered before close() and no journal to keep it")
            return not left
        finally:
            self._leftover_lock.release()

    def _save_unconfirmed(self, journal: Journal) -> None:
        with self._track_lock:
            ids = list(self._unconfirmed)
        try:
            journal.save_unconfirmed(ids)
        except OSError as err:
            log.warning("plan-ledger: the ids of %d delivered event(s) not yet confirmed stored could not be kept in %s (%s); the next client's flush(stored=True) will not wait for them", len(ids), journal.directory, err)

    def _closing_in_this_thread(self) -> bool:
        return self._closed and self._close_thread == threading.get_ident() and not self._close_finished.is_set()

    def install_sigterm_handler(self, timeout: Optional[float] = None) -> Any:
        """On SIGTERM: ``close(timeout)`` (default ``exit_timeout``), then the handler that was there
        before runs (the default one ends the process by SIGTERM, as it would have). When SIGTERM
        comes while this thread is already closing the client (``with``, ``atexit``, a pool's
        teardown), that close goes on, within ``timeout``, and the previous handler runs once it has
        delivered or journaled everything. Call it from the main thread; returns the previous handler."""
        previous = signal.getsignal(signal.SIGTERM)
        wait = self._exit_timeout if timeout is None else timeout
        client = weakref.ref(self)

        def on_sigterm(signum: int, frame: Any) -> None:
            def after() -> None:
                if callable(previous):
                    previous(signum, frame)
                elif previous == signal.SIG_IGN:
                    return
                else:
                    signal.signal(signal.SIGTERM, signal.SIG_DFL)
                    os.kill(os.getpid(), signal.SIGTERM)

            c = client()
            if c is not None and c._closing_in_this_thread():
                # the close this handler interrupted finishes first (sooner: within `wait`), then `after`
                c._after_close = after
                c._close_again(wait, threading.get_ident())
                return
            if c is not None:
                c.close(wait)
            after()

        signal.signal(signal.SIGTERM, on_sigterm)
        return previous

    def stats(self) -> Stats:
        s = self._stats
        j = self._journal
        return Stats(
            s.published, s.accepted, s.rejected, len(self._buffer) + len(self._in_hand or ()), s.journaled, j.backlog if j is not None else 0, s.dropped,
            s.invalid, s.unencodable, s.closed, s.lost, s.sender_errors, s.dead_lettered, s.confirmed, len(self._unconfirmed), s.untracked, s.torn_bytes,
        )

    # ---------------------------------------------------------------- fork

    def _after_fork_in_child(self) -> None:
        """Runs in the child right after a fork (nothing that could block): the child starts empty. Its
        sender and its journal (``<journal_dir>/fork-<pid>``) are made on its first use of the client."""
        journal = self._journal
        self._init_runtime()
        self._journal = None
        if journal is not None:
            journal.release_in_child()
        self._fork_pending = True

    def _setup_in_child(self) -> None:
        with self._setup_lock:
            if not self._fork_pending or self._closed:
                return
            where = "no journal"
            if self._journal_root is not None:
                directory = os.path.join(self._journal_root, f"{FORK_PREFIX}{os.getpid()}")
                try:
                    self._journal = Journal(directory, self._max_journal_bytes, adopt_forks=False, lock_wait=5.0)
                    self._stats.torn_bytes = self._journal.torn_bytes
                    self._adopt_unconfirmed(self._journal)
                    where = f"its own journal {directory} (adopted by the journal's owner once this process is gone)"
                except OSError as err:
                    where = f"no journal ({directory}: {err})"
            log.info("plan-ledger: client used in forked process %d: it sends with a sender thread of its own and %s; the parent's buffered events stay the parent's", os.getpid(), where)
            self._start_sender()
            _LIVE.add(self)
            self._fork_pending = False

    # ---------------------------------------------------------------- sender thread

    def _run(self) -> None:
        while not self._stopping:
            try:
                self._cycle()
            except BaseException as err:  # noqa: B036 - nothing but close() ends this thread
                self._survive(err)

    def _survive(self, err: BaseException) -> None:
        """An unexpected error in the sender: logged and counted; the batch in hand is kept (journal or
        memory) or, when even that fails, counted as lost. The thread goes on."""
        try:
            self._stats.sender_errors += 1
            with self._hand_lock:
                batch = self._in_hand
                if batch and not self._abandoned:
                    try:
                        self._keep(batch)
                    except BaseException:  # noqa: B036
                        self._stats.lost += len(batch)
                        log.exception("plan-ledger lost %d event(s) to an internal error", len(batch))
                # released once kept: flush() must never see the batch in neither place
                self._in_hand = None
            self._log_rarely("sender", logging.ERROR, "plan-ledger sender thread survived an unexpected error (%d so far); its batch is kept", self._stats.sender_errors, exc_info=err)
            self._wake.wait(0.05)
        except BaseException:  # noqa: B036 - never let the thread die
            pass

    def _cycle(self) -> None:
        now = time.monotonic()
        retry, self._retry_now = self._retry_now, False
        journal = self._journal
        if not self._reachable and (retry or now >= self._next_probe):
            if self._probe():
                log.info("plan-ledger server at %s answers again: sending", self._url.geturl())
                self._reachable = True
                self._next_post = now
            else:
                self._next_probe = time.monotonic() + (min(0.2, self._probe_interval) if self._closing and journal is None else self._probe_interval)
        up = self._reachable and (retry or now >= self._next_post)
        if journal is not None and self._buffer and (not up or journal.backlog):
            if self._closing or now - self._last_commit >= self._commit_s:
                self._commit_memory(journal)
        if up and self._send_one(journal):
            return
        if journal is not None and now >= self._next_adopt:
            self._next_adopt = now + 30.0
            if not os.path.basename(journal.directory).startswith(FORK_PREFIX):
                journal.adopt_forks()
                self._adopt_unconfirmed(journal)
        if self._closing and not self._buffer and self._in_hand is None and (journal is None or not journal.backlog or not up):
            self._close_done.set()
        self._sleep(journal)

    def _sleep(self, journal: Optional[Journal]) -> None:
        now = time.monotonic()
        until = self._next_adopt if journal is not None else now + 3600.0
        sendable = self._reachable and now >= self._next_post
        if not self._reachable:
            until = min(until, self._next_probe)
        elif not sendable:
            until = min(until, self._next_post)
        if journal is not None and (not sendable or journal.backlog):
            # while events cannot be sent, memory goes to the journal every journal_commit_ms
            until = min(until, max(self._last_commit + self._commit_s, now + 0.001) if self._buffer else now + self._commit_s)
        self._sleeping = sendable  # an event published now is worth waking for
        self._wake.clear()
        if not (sendable and self._buffer) and not self._stopping and not self._retry_now:
            self._wake.wait(max(until - now, 0.0))
        self._sleeping = False

    def _commit_memory(self, journal: Journal) -> None:
        """Group commit: what memory holds goes to the journal, one line per batch, in one write and
        one fsync (up to 8 MiB per write)."""
        self._last_commit = time.monotonic()
        while self._buffer:
            taken: List[Item] = []
            self._in_hand = taken
            lines: List[bytes] = []
            size = 0
            while self._buffer and size < _BATCH_BYTES:
                batch = self._take_into(taken)
                lines.append(b"[" + b",".join(data for _, data in batch) + b"]\n")
                size += len(lines[-1])
            if not taken:
                self._in_hand = None
                break
            try:
                ok = journal.append_raw(b"".join(lines))
            except OSError as err:
                ok = False
                self._drop(len(taken), f"the journal write failed ({err})")
            else:
                if ok:
                    self._stats.journaled += len(taken)
                else:
                    self._drop(len(taken), "the journal is full (max_journal_bytes)")
            self._in_hand = None

    def _take(self) -> List[Item]:
        """Up to ``batch_size`` events (and 8 MiB) out of the buffer, held in ``_in_hand`` until delivered or kept."""
        batch: List[Item] = []
        self._in_hand = batch  # set first: flush() must never see the events in neither place
        self._take_into(batch)
        if not batch:
            self._in_hand = None
        return batch

    def _take_into(self, hand: List[Item]) -> List[Item]:
        """Moves one batch from the buffer to the end of ``hand`` (already ``_in_hand``); returns the batch."""
        start = len(hand)
        size = 0
        buffer = self._buffer
        while len(hand) - start < self._batch_size and size < _BATCH_BYTES:
            try:
                item = buffer.popleft()
            except IndexError:
                break
            hand.append(item)
            size += len(item[1])
        return hand[start:]

    def _send_one(self, journal: Optional[Journal]) -> bool:
        """Sends the oldest waiting batch (the journal's head first); False when nothing waits."""
        if journal is not None and journal.backlog:
            head = journal.peek()
            if head is None:
                return False
            end, items = head
            if not items or self._post(items):
                journal.commit(end)
            return True
        batch = self._take()
        if not batch:
            return False
        left: List[Item] = []
        self._post(batch, left)
        with self._hand_lock:
            if not self._abandoned:
                self._keep(left)
                self._in_hand = None
        return True

    def _keep(self, items: List[Item]) -> None:
        """Events not delivered: to the journal, or back to the front of memory without one."""
        if not items:
            return
        if self._journal is not None:
            self._keep_in_journal(items)
        else:
            self._buffer.extendleft(reversed(items))

    def _keep_in_journal(self, items: List[Item]) -> None:
        journal = self._journal
        assert journal is not None
        try:
            ok = journal.append([data for _, data in items])
        except OSError as err:
            self._drop(len(items), f"the journal write failed ({err})")
            return
        if ok:
            self._stats.journaled += len(items)
        else:
            self._drop(len(items), "the journal is full (max_journal_bytes)")

    def _probe(self) -> bool:
        """True when the server answers HTTP at all (``GET /healthz``)."""
        conn = self._new_connection(min(self._timeout, 2.0))
        try:
            conn.request("GET", "/healthz", headers={"accept": "application/json"})
            conn.getresponse().read()
            return True
        except (OSError, http.client.HTTPException):
            return False
        finally:
            conn.close()

    def _unreachable(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._conn = None
        if self._reachable:
            self._log_rarely("down", logging.WARNING, "plan-ledger server unreachable at %s: events go to %s; probing every %.1f s", self._url.geturl(), "the journal" if self._journal else "memory", self._probe_interval)
        self._reachable = False
        self._next_probe = time.monotonic() + self._probe_interval

    def _refused(self, retry_after: Optional[float]) -> None:
        """The server answered but cannot take events now: back off (exponential, full jitter, Retry-After)."""
        self._backoff = min(max(self._backoff * 2, 0.1), self._max_backoff)
        wait = random.uniform(self._backoff / 2, self._backoff)
        if retry_after is not None:
            wait = max(wait, min(retry_after, self._max_backoff))
        self._next_post = time.monotonic() + wait

    def _post(self, items: List[Item], left: Optional[List[Item]] = None) -> bool:
        """Posts ``items`` as one request (split on 413 or 400). True when the server answered for all
        of them; otherwise the undelivered ones are added to ``left`` (when given)."""
        body = b"[" + b",".join(data for _, data in items) + b"]"
        headers = {"content-type": "application/json", "accept": "application/json"}
        if self._ingest_key:
            headers["authorization"] = f"Bearer {self._ingest_key}"
        for attempt in (1, 2):
            conn = self._conn
            if conn is not None and _closed_by_peer(conn):
                conn.close()
                conn = self._conn = None
            reused = conn is not None and conn.sock is not None
            try:
                if conn is None:
                    conn = self._conn = self._new_connection(self._timeout)
                conn.request("POST", "/v1/events", body=body, headers=headers)
                res = conn.getresponse()
                data = res.read()
                break
            except (OSError, http.client.HTTPException) as err:
                if attempt == 1 and reused and isinstance(err, _PEER_CLOSED):
                    # the server closed its idle keep-alive connection as this request left: not an
                    # outage; once more on a new connection (the server keeps one copy of an eventId)
                    conn.close()
                    self._conn = None
                    continue
                self._unreachable()
                if left is not None:
                    left.extend(items)
                return False
        status = res.status
        if status == 202:
            self._backoff = 0.0
            self._delivered(items, data, left)
            return True
        if status in (400, 413) and len(items) > 1:
            # one event too large or unreadable for the server must not hold back the others
            half = len(items) // 2
            if not self._post(items[:half], left):
                if left is not None:
                    left.extend(items[half:])
                return False
            return self._post(items[half:], left)
        if status in (400, 413):
            self._stats.published += 1
            self._stats.rejected += 1
            self._warn_refused(items[0][1], [f"{status}: {data[:300].decode('utf-8', 'replace')}"])
            return True
        if status in (401, 403):
            # a key problem is fixed by an operator, not by dropping events: keep them (journal) and retry
            self._log_rarely("key", logging.ERROR, "plan-ledger: the server refused the ingest key (%d: %s); events are kept and retried", status, data[:200].decode("utf-8", "replace"))
        retry_after = res.getheader("retry-after")
        try:
            after = float(retry_after) if retry_after is not None else None
        except ValueError:
            after = None
        self._refused(after)
        if left is not None:
            left.extend(items)
        return False

    def _delivered(self, items: List[Item], data: bytes, left: Optional[List[Item]]) -> None:
        """A 202: count it, log the events it refused, keep the ids to confirm, hand back what it dropped."""
        stats = self._stats
        fast = _FAST_202(data)
        if fast is not None and int(fast.group(1)) == len(items):
            stats.published += len(items)
            stats.accepted += len(items)
            self._track(eid for eid, _ in items)
            return
        answer = json.loads(data)
        results = answer.get("results") or []
        accepted: List[Optional[str]] = []
        dropped: List[Item] = []
        for r in results:
            index = r.get("index")
            if not isinstance(index, int) or not 0 <= index < len(items):
                continue
            status = r.get("status")
            if status == "accepted":
                accepted.append(items[index][0])
            elif status == "invalid":
                self._warn_refused(items[index][1], [v.get("message", "") for v in r.get("violations") or []])
            elif status == "dropped":
                dropped.append(items[index])
        stats.published += len(items) - len(dropped)
        stats.accepted += len(accepted)
        stats.rejected += answer.get("invalid", 0)
        self._track(accepted)
        if dropped:
            # the server could not keep these (its journal is full): send them again after a back-off
            self._refused(None)
            if left is not None:
                left.extend(dropped)
            else:
                self._keep(dropped)

    def _warn_refused(self, data: bytes, violations: List[str]) -> None:
        try:
            e = json.loads(data)
        except ValueError:
            e = {}
        self._log_rarely(
            "rejected",
            logging.WARNING,
            "plan-ledger server refused an event: %s of plan %s, seq %s, eventId %s: %s (refused so far: %d)",
            _show(e.get("type")), _show(e.get("planId")), _show(e.get("seq")), _show(e.get("eventId")), "; ".join(violations[:5]), self._stats.rejected + 1,
        )

    def _adopt_unconfirmed(self, journal: Journal) -> None:
        """Ids a previous client on this directory (or a forked child's, adopted) delivered without
        seeing them stored: ``flush(stored=True)`` waits for them too."""
        ids = journal.take_unconfirmed()
        if ids:
            self._track(ids)
            log.info("plan-ledger: %d event(s) a previous client on %s delivered are not yet confirmed stored; flush(stored=True) waits for them", len(ids), journal.directory)

    def _track(self, ids: Iterable[Optional[str]]) -> None:
        """Delivered ids, kept for flush(stored=True); the oldest are forgotten past ``max_unconfirmed``."""
        limit = self._max_unconfirmed
        with self._track_lock:
            tracked = self._unconfirmed
            for eid in ids:
                if isinstance(eid, str):
                    tracked[eid.lower()] = None  # the server answers ids in lower case
            over = len(tracked) - limit
            if over > 0:
                self._stats.untracked += over
                for _ in range(over):
                    del tracked[next(iter(tracked))]

    # ---------------------------------------------------------------- read your writes

    def _wait_stored(self, deadline: float) -> bool:
        with self._track_lock:
            pending = list(self._unconfirmed)
        while pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            chunk = pending[:_STATUS_IDS]
            try:
                status = self.events_status(chunk, wait_ms=int(min(remaining, 30.0) * 1000))
            except NotFound:
                raise PlanLedgerError(404, "the server has no POST /v1/events/status (it is older than this client): flush(stored=True) cannot confirm storage") from None
            except PlanLedgerError as err:
                if err.status not in (0, 502, 503, 504):
                    raise
                time.sleep(min(0.2, max(deadline - time.monotonic(), 0)))
                continue
            done = set(status.applied) | set(status.refused)
            if status.refused:
                self._stats.dead_lettered += len(status.refused)
                log.warning("plan-ledger: the worker refused %d delivered event(s) (dead-lettered; their seqs voided), e.g. %s", len(status.refused), ", ".join(status.refused[:5]))
            self._stats.confirmed += len(status.applied)
            with self._track_lock:
                for eid in done:
                    self._unconfirmed.pop(eid, None)
            pending = [eid for eid in pending if eid not in done]
        return True

    def events_status(self, event_ids: Sequence[str], wait_ms: int = 0) -> EventStatus:
        """``POST /v1/events/status``: which of these ids (at most 10,000) are applied, waiting behind a
        missing seq, refused (dead-lettered) or unknown; with ``wait_ms`` the server waits until none is
        waiting or unknown, or the time is up."""
        body = json.dumps({"eventIds": list(event_ids), "waitMs": int(wait_ms)}).encode("utf-8")
        key = self._ingest_key or self._read_key or self._admin_key
        data = self._request("POST", "/v1/events/status", body, key, timeout=max(self._timeout, wait_ms / 1000 + 10))[1]
        return EventStatus.from_json(json.loads(data))

    # ---------------------------------------------------------------- reads

    def active_plan(self, session_id: str) -> SessionActivePlan:
        """The session's newest unfinished plan (``active_plan``: None when it has none; with ``steps`` and
        ``next_seq``). A session the server never saw has no active plan."""
        try:
            return SessionActivePlan.from_json(self._get(f"/v1/sessions/{_q(session_id)}/active"))
        except NotFound:  # servers before 0.2 answer 404 for a session they never saw
            return SessionActivePlan.from_json({"sessionId": session_id, "activePlan": None, "otherActivePlanIds": []})

    def history(self, session_id: str, limit: int = 10) -> SessionHistory:
        """The session's finished plans, newest first."""
        return SessionHistory.from_json(self._get(f"/v1/sessions/{_q(session_id)}/history?limit={int(limit)}"))

    def plans(self, session_id: str, status: Optional[str] = None, limit: int = 20, offset: int = 0) -> PlanPage:
        """One page of a session's plans, newest first (``status``: planning, executing, completed, failed, cancelled...)."""
        query = {"sessionId": session_id, "limit": str(int(limit)), "offset": str(int(offset))}
        if status is not None:
            query["status"] = status
        return PlanPage.from_json(self._get("/v1/plans?" + urllib.parse.urlencode(query)))

    def plan(self, plan_id: str) -> PlanTimeline:
        """The plan's timeline: steps, handoffs, decisions (the approve/edit/reject trail), checkpoints."""
        return PlanTimeline.from_json(self._get(f"/v1/plans/{_q(plan_id)}"))

    def decisions(self, plan_id: str) -> List[Decision]:
        """The plan's approve / edit / reject trail, oldest first (an edit says what it changed and replaced)."""
        return self.plan(plan_id).decisions

    def resume_point(self, plan_id: str) -> ResumePoint:
        """Where a workflow continues: DAG, latest checkpoint, next layer's steps, ``next_seq``."""
        return ResumePoint.from_json(self._get(f"/v1/workflows/{_q(plan_id)}/resume-point"))

    def step_output(self, plan_id: str, step: Union[str, int]) -> str:
        """A step's stored output content, exactly as stored. Raises NotFound when none."""
        return self._request("GET", f"/v1/plans/{_q(plan_id)}/steps/{_q(str(step))}/output", None, self._read_key or self._admin_key, accept="text/plain")[1].decode("utf-8")

    def plan_lineage(self, plan_id: str) -> PlanLineage:
        """The fork tree the plan belongs to: ``root`` (the oldest ancestor still stored), each node's
        forks and replays in ``children``, oldest first; ``current`` marks ``plan_id``."""
        return PlanLineage.from_json(self._get(f"/v1/plans/{_q(plan_id)}/lineage"))

    # ---------------------------------------------------------------- fork and replay (admin key)

    def fork_plan(
        self,
        plan_id: str,
        *,
        from_layer: Optional[int] = None,
        from_checkpoint: Optional[str] = None,
        from_failure: bool = False,
        new_plan_id: Optional[str] = None,
        session_id: Optional[str] = None,
        edit_steps: Optional[Iterable[Any]] = None,
    ) -> ForkOutcome:
        """A new plan from a stored one (``POST /v1/plans/{id}/fork``), starting at exactly one of
        ``from_layer`` (its earlier layers inherited), ``from_checkpoint`` (the layer after that checkpoint
        of the parent) or ``from_failure=True`` (the parent's first layer with a failed step).

        ``edit_steps`` change steps of the fork layer or later (same ``step_id``) or add steps (a new one):
        ``StepInput`` or dicts as for ``plan_created`` (their ``index`` is set by the server). The new plan's
        id is the parent's with ``.fork-<8 hex>`` unless ``new_plan_id`` is given: give it to make a retry
        safe (a second call then raises ``Conflict``). Its executor continues it as after a restart:
        ``continue_plan(outcome.plan_id, outcome.next_seq)``, then ``outcome.next_steps`` of
        ``outcome.next_layer``. Raises ``NotFound`` (404: no such plan or checkpoint), ``Conflict`` (409)
        or ``PlanLedgerError`` (400: a malformed argument; 401/403: the key is unknown or not an admin key);
        ``ValueError`` before sending when the start is not exactly one or the client has no ``admin_key``."""
        given = [from_layer is not None, from_checkpoint is not None, from_failure is True]
        if given.count(True) != 1:
            raise ValueError("fork_plan: give exactly one of from_layer=N, from_checkpoint=ID, from_failure=True (or use replay_plan)")
        body: JsonObject = {}
        if from_layer is not None:
            body["fromLayer"] = from_layer
        elif from_checkpoint is not None:
            body["fromCheckpoint"] = from_checkpoint
        else:
            body["fromFailure"] = True
        return self._fork("fork", plan_id, body, new_plan_id, session_id, edit_steps)

    def replay_plan(
        self,
        plan_id: str,
        *,
        new_plan_id: Optional[str] = None,
        session_id: Optional[str] = None,
        edit_steps: Optional[Iterable[Any]] = None,
    ) -> ForkOutcome:
        """Run a stored plan again (``POST /v1/plans/{id}/replay``): a new plan with the same steps, every
        layer to run, its lineage recorded. Arguments, answer and errors as ``fork_plan``'s."""
        return self._fork("replay", plan_id, {}, new_plan_id, session_id, edit_steps)

    def _fork(self, kind: str, plan_id: str, body: JsonObject, new_plan_id: Optional[str], session_id: Optional[str], edit_steps: Optional[Iterable[Any]]) -> ForkOutcome:
        if not self._admin_key:
            raise ValueError(f"{kind}_plan needs an admin key: create the client with admin_key= (a key of the server's HTTP_ADMIN_KEYS)")
        if new_plan_id is not None:
            body["planId"] = new_plan_id
        if session_id is not None:
            body["sessionId"] = session_id
        if edit_steps is not None:
            body["editSteps"] = _steps(edit_steps)
        data = json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
        return ForkOutcome.from_json(json.loads(self._request("POST", f"/v1/plans/{_q(plan_id)}/{kind}", data, self._admin_key)[1]))

    def _get(self, path: str) -> JsonObject:
        return json.loads(self._request("GET", path, None, self._read_key or self._admin_key)[1])  # type: ignore[no-any-return]

    def _request(self, method: str, path: str, body: Optional[bytes], key: Optional[str], accept: str = "application/json", timeout: Optional[float] = None) -> Tuple[int, bytes]:
        headers = {"accept": accept}
        if key:
            headers["authorization"] = f"Bearer {key}"
        if body is not None:
            headers["content-type"] = "application/json"
        conn = self._new_connection(timeout or self._timeout)
        try:
            conn.request(method, path, body=body, headers=headers)
            res = conn.getresponse()
            data = res.read()
        except (OSError, http.client.HTTPException) as err:
            raise PlanLedgerError(0, f"plan-ledger server unreachable at {self._url.geturl()}: {err}") from None
        finally:
            conn.close()
        if res.status >= 400:
            try:
                message = json.loads(data).get("error", "")
            except (ValueError, AttributeError):
                message = data.decode("utf-8", "replace")
            raise _ERRORS.get(res.status, PlanLedgerError)(res.status, message)
        return res.status, data

    def _new_connection(self, timeout: float) -> http.client.HTTPConnection:
        cls = http.client.HTTPSConnection if self._url.scheme == "https" else http.client.HTTPConnection
        return cls(self._url.hostname, self._url.port, timeout=timeout)  # type: ignore[arg-type]

    # ---------------------------------------------------------------- logs

    def _log_rarely(self, kind: str, level: int, message: str, *args: Any, exc_info: Optional[BaseException] = None) -> None:
        """At most one line per kind per 5 s: a flood of refusals or drops must not flood the log."""
        now = time.monotonic()
        if now - self._last_log.get(kind, -10.0) > 5.0:
            self._last_log[kind] = now
            log.log(level, message, *args, exc_info=exc_info)

    def _drop(self, count: int, why: str) -> None:
        with self._count_lock:
            self._stats.dropped += count
        self._log_rarely("drop", logging.ERROR, "plan-ledger dropped %d event(s): %s (dropped so far: %d)", count, why, self._stats.dropped)


def _show(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


_last_ms = -1
_counter = 0


def _uuid7() -> str:
    """A version 7 UUID (RFC 9562) as text: the Unix time in ms, a counter, 62 random bits.

    Ids stamped close together are neighbours in the server's ``event_id`` index, so a batch's
    inserts touch a few index pages instead of one random page each (as the TypeScript
    publisher's). Within one ms a 12-bit counter, started at a random value below 2048, keeps this
    process's ids in stamping order; past 4096 in one ms, or when the clock steps back, the time
    borrows the next ms. eventId needs uniqueness, not secrecy: the random bits come from
    ``random`` (seeded from os.urandom, reseeded in a forked child) instead of one ``os.urandom``
    system call per event.
    """
    global _last_ms, _counter
    ms = time.time_ns() // 1_000_000
    if ms > _last_ms:
        _last_ms = ms
        _counter = random.getrandbits(11)
    else:
        _counter += 1
        if _counter > 0xFFF:
            _last_ms += 1
            _counter = 0
    h = "%012x%04x%016x" % (_last_ms, 0x7000 | _counter, (0x2 << 62) | random.getrandbits(62))
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _q(part: str) -> str:
    return urllib.parse.quote(part, safe="")


def _usage(provider: Optional[str], cache_read: Optional[int], cache_write: Optional[int], reasoning: Optional[int], reported_cost: Optional[str]) -> JsonObject:
    """The optional usage fields of step.completed / step.failed."""
    return {"provider": provider, "cacheReadTokens": cache_read, "cacheWriteTokens": cache_write, "reasoningTokens": reasoning, "reportedCost": reported_cost}
