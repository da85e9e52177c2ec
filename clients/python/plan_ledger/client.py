"""Fire-and-forget publishing to ``plan-ledger serve``, and read helpers. Standard library only."""
from __future__ import annotations

import atexit
import collections
import datetime
import http.client
import json
import logging
import random
import threading
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any, Deque, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from .journal import Journal

log = logging.getLogger("plan_ledger")

SPEC_VERSION = 1
JsonObject = Dict[str, Any]


class PlanLedgerError(Exception):
    """A read failed: ``status`` is the HTTP status (0: the server could not be reached)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}" if status else message)
        self.status = status
        self.message = message


class NotFound(PlanLedgerError):
    """404: the plan, session or step does not exist (or has no stored output)."""


@dataclass(frozen=True)
class PublishResult:
    """What ``publish()`` says at once. ``ok`` False: ``reason`` is ``dropped`` (buffer full) or ``closed``."""

    ok: bool
    event_id: str
    seq: int
    reason: Optional[str] = None


@dataclass(frozen=True)
class Plan:
    """The plan an event belongs to, as the typed helpers take it."""

    plan_id: str
    session_id: str


@dataclass
class Stats:
    published: int = 0  # events the server answered for (accepted or invalid)
    accepted: int = 0
    rejected: int = 0  # events the server found invalid (logged with their violations)
    buffered: int = 0
    journaled: int = 0  # events written to the journal since start
    journal_bytes: int = 0
    dropped: int = 0  # events lost past the buffer or journal bound (each logged)


class PlanLedgerClient:
    """Publishes plan events to ``plan-ledger serve`` without ever blocking the caller.

    ``publish()`` stamps the event (``eventId``, per-plan ``seq``, ``occurredAt``) and appends it to a
    bounded in-memory buffer; a background thread posts batches to ``POST /v1/events`` with retry,
    exponential backoff and jitter. While the server is unreachable, batches go to a journal file
    (``journal_dir``) that is replayed in order when it returns, also by the next process on the same
    directory. At interpreter exit (``atexit``) the buffer is flushed, to the server or the journal.
    Only past ``max_buffered`` events in memory or ``max_journal_bytes`` on disk are events dropped,
    each one counted in ``stats().dropped`` and logged.

    Example::

        ledger = PlanLedgerClient("http://127.0.0.1:8080", ingest_key=KEY, read_key=RKEY, journal_dir="./journal")
        plan = Plan("plan_42", "session_7")
        ledger.plan_created(plan, query="Summarise", steps=[{"stepId": "s1", "index": 0, "agentId": "writer", "task": "Summarise"}])
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
    ) -> None:
        """``journal_dir=None`` keeps no journal: while the server is down, events wait in memory only."""
        url = urllib.parse.urlsplit(base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"base_url must be http(s)://host:port, got {base_url!r}")
        self._url = url
        self._ingest_key = ingest_key
        self._read_key = read_key
        self._max_buffered = max_buffered
        self._batch_size = batch_size
        self._timeout = timeout
        self._max_backoff = max_backoff
        self._exit_timeout = exit_timeout
        self._buffer: Deque[JsonObject] = collections.deque()
        self._seq: Dict[str, int] = {}
        self._seq_lock = threading.Lock()
        self._stats = Stats()
        self._journal = Journal(journal_dir, max_journal_bytes) if journal_dir else None
        self._wake = threading.Event()
        self._closed = False
        self._stopping = False
        self._in_flight = 0
        self._conn: Optional[http.client.HTTPConnection] = None
        self._last_drop_log = 0.0
        self._last_warn_log = 0.0
        self._last_ms = -1
        self._last_iso = ""
        self._thread = threading.Thread(target=self._run, name="plan-ledger-sender", daemon=True)
        self._thread.start()
        atexit.register(self.close, exit_timeout)

    # ---------------------------------------------------------------- publishing

    def publish(self, event: Mapping[str, Any]) -> PublishResult:
        """Stamps and queues one event; never blocks on the network or the disk, never raises for them.

        Stamps left out are filled in: ``specVersion``, ``eventId`` (a time-ordered uuid7), ``seq`` (the plan's next:
        0, 1, 2, ... in this process, or from ``continue_plan``) and ``occurredAt`` (now, UTC).
        The server checks the contract; invalid events are logged and counted in ``stats().rejected``.
        The event is serialised by the sender thread, milliseconds later (that keeps this call at a
        few microseconds): do not change the event or its payload after publishing it.
        """
        e = dict(event)
        e.setdefault("specVersion", SPEC_VERSION)
        if "eventId" not in e:
            e["eventId"] = _uuid7()
        plan_id = e.get("planId")
        with self._seq_lock:
            if "seq" not in e:
                e["seq"] = self._seq.get(plan_id, 0)  # type: ignore[arg-type]
            if isinstance(e["seq"], int):
                self._seq[plan_id] = max(self._seq.get(plan_id, 0), e["seq"] + 1)  # type: ignore[index]
        if "occurredAt" not in e:
            e["occurredAt"] = self._now()
        if self._closed:
            return PublishResult(False, e["eventId"], e["seq"], "closed")
        if len(self._buffer) >= self._max_buffered:
            self._drop(1, "the in-memory buffer is full (max_buffered)")
            return PublishResult(False, e["eventId"], e["seq"], "dropped")
        # serialised by the sender thread: the caller pays only for the stamps
        self._buffer.append(e)
        if len(self._buffer) >= self._batch_size:
            self._wake.set()
        return PublishResult(True, e["eventId"], e["seq"])

    def _now(self) -> str:
        """ISO-8601 UTC with milliseconds; the text is reused within one millisecond (formatting costs more than reading the clock)."""
        ms = time.time_ns() // 1_000_000
        if ms != self._last_ms:
            self._last_ms = ms
            self._last_iso = datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        return self._last_iso

    def continue_plan(self, plan_id: str, next_seq: int) -> None:
        """A plan started by an earlier process continues from ``next_seq`` (a resume point's ``nextSeq``)."""
        if not isinstance(next_seq, int) or next_seq < 0:
            raise ValueError(f"next_seq must be a non-negative integer, got {next_seq!r}")
        with self._seq_lock:
            self._seq[plan_id] = max(self._seq.get(plan_id, 0), next_seq)

    def flush(self, timeout: float = 10.0) -> bool:
        """Waits until every event published so far reached the server; False at the timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self._buffer and self._in_flight == 0 and not (self._journal and self._journal.backlog_bytes):
                return True
            self._wake.set()
            time.sleep(0.005)
        return False

    def close(self, timeout: float = 5.0) -> bool:
        """Stops accepting events, delivers what it can within ``timeout``, journals the rest. Idempotent."""
        if self._closed:
            return True
        self._closed = True
        flushed = self.flush(timeout)
        self._stopping = True
        self._wake.set()
        self._thread.join(max(timeout, 1.0))
        if self._buffer and self._journal is not None:
            self._spill_all()
        if self._buffer:
            self._drop(len(self._buffer), "not delivered before close and no journal to keep it")
            self._buffer.clear()
        if self._journal is not None:
            self._journal.close()
        if self._conn is not None:
            self._conn.close()
        try:
            atexit.unregister(self.close)
        except Exception:  # pragma: no cover
            pass
        return flushed

    def stats(self) -> Stats:
        s = self._stats
        return Stats(s.published, s.accepted, s.rejected, len(self._buffer), s.journaled, self._journal.backlog_bytes if self._journal else 0, s.dropped)

    # ---------------------------------------------------------------- typed helpers

    def _typed(self, type_: str, plan: Plan, payload: JsonObject, seq: Optional[int], event_id: Optional[str]) -> PublishResult:
        event: JsonObject = {"type": type_, "planId": plan.plan_id, "sessionId": plan.session_id, "payload": {k: v for k, v in payload.items() if v is not None}}
        if seq is not None:
            event["seq"] = seq
        if event_id is not None:
            event["eventId"] = event_id
        return self.publish(event)

    def plan_created(self, plan: Plan, query: str, steps: Sequence[JsonObject], requires_approval: Optional[bool] = None, complexity: Optional[int] = None, seq: Optional[int] = None, event_id: Optional[str] = None) -> PublishResult:
        """``steps``: ``{"stepId", "index", "agentId", "task", "title"?, "expectedOutput"?, "dependsOn"?}``."""
        return self._typed("plan.created", plan, {"query": query, "steps": list(steps), "requiresApproval": requires_approval, "complexity": complexity}, seq, event_id)

    def plan_decision(self, plan: Plan, decision: str, steps: Optional[Sequence[JsonObject]] = None, feedback: Optional[str] = None, decided_by: Optional[str] = None, seq: Optional[int] = None, event_id: Optional[str] = None) -> PublishResult:
        """``decision``: approve | edit (with the full new ``steps``) | reject."""
        return self._typed("plan.decision", plan, {"decision": decision, "steps": list(steps) if steps is not None else None, "feedback": feedback, "decidedBy": decided_by}, seq, event_id)

    def step_started(self, plan: Plan, step_id: str, agent_id: Optional[str] = None, seq: Optional[int] = None) -> PublishResult:
        return self._typed("step.started", plan, {"stepId": step_id, "agentId": agent_id}, seq, None)

    def step_completed(self, plan: Plan, step_id: str, input_tokens: int, output_tokens: int, result: Optional[str] = None, output_content: Optional[str] = None, model: Optional[str] = None, seq: Optional[int] = None) -> PublishResult:
        return self._typed("step.completed", plan, {"stepId": step_id, "inputTokens": input_tokens, "outputTokens": output_tokens, "result": result, "outputContent": output_content, "model": model}, seq, None)

    def step_failed(self, plan: Plan, step_id: str, error: str, input_tokens: Optional[int] = None, output_tokens: Optional[int] = None, model: Optional[str] = None, seq: Optional[int] = None) -> PublishResult:
        return self._typed("step.failed", plan, {"stepId": step_id, "error": error, "inputTokens": input_tokens, "outputTokens": output_tokens, "model": model}, seq, None)

    def step_skipped(self, plan: Plan, step_id: str, reason: Optional[str] = None, seq: Optional[int] = None) -> PublishResult:
        return self._typed("step.skipped", plan, {"stepId": step_id, "reason": reason}, seq, None)

    def handoff_recorded(self, plan: Plan, handoff_id: str, from_agent_id: str, to_agent_id: str, reason: str, step_id: Optional[str] = None, explanation: Optional[str] = None, seq: Optional[int] = None) -> PublishResult:
        return self._typed("handoff.recorded", plan, {"handoffId": handoff_id, "fromAgentId": from_agent_id, "toAgentId": to_agent_id, "reason": reason, "stepId": step_id, "explanation": explanation}, seq, None)

    def checkpoint_saved(self, plan: Plan, checkpoint_id: str, layer: int, state: JsonObject, seq: Optional[int] = None) -> PublishResult:
        return self._typed("checkpoint.saved", plan, {"checkpointId": checkpoint_id, "layer": layer, "state": state}, seq, None)

    def plan_finalized(self, plan: Plan, status: str, summary: Optional[str] = None, failure_reason: Optional[str] = None, seq: Optional[int] = None) -> PublishResult:
        """``status``: completed | failed | cancelled."""
        return self._typed("plan.finalized", plan, {"status": status, "summary": summary, "failureReason": failure_reason}, seq, None)

    # ---------------------------------------------------------------- reads

    def active_plan(self, session_id: str) -> JsonObject:
        """``{sessionId, activePlan (None when none; with steps and nextSeq), otherActivePlanIds}`` (seed 001)."""
        return self._get(f"/v1/sessions/{_q(session_id)}/active")

    def history(self, session_id: str, limit: int = 10) -> JsonObject:
        """``{sessionId, plans}``: the session's finished plans, newest first."""
        return self._get(f"/v1/sessions/{_q(session_id)}/history?limit={int(limit)}")

    def plan(self, plan_id: str) -> JsonObject:
        """The plan's timeline: steps, handoffs, decisions (the approve/edit/reject trail), checkpoints."""
        return self._get(f"/v1/plans/{_q(plan_id)}")

    def resume_point(self, plan_id: str) -> JsonObject:
        """Where a workflow continues: DAG, latest checkpoint, next layer's steps, ``nextSeq``."""
        return self._get(f"/v1/workflows/{_q(plan_id)}/resume-point")

    def step_output(self, plan_id: str, step: Union[str, int]) -> str:
        """A step's stored output content, exactly as stored (seed 003). Raises NotFound when none."""
        return self._request("GET", f"/v1/plans/{_q(plan_id)}/steps/{_q(str(step))}/output", None, self._read_key, accept="text/plain")[1].decode("utf-8")

    def _get(self, path: str) -> JsonObject:
        return json.loads(self._request("GET", path, None, self._read_key)[1])

    def _request(self, method: str, path: str, body: Optional[bytes], key: Optional[str], accept: str = "application/json") -> Tuple[int, bytes]:
        headers = {"accept": accept}
        if key:
            headers["authorization"] = f"Bearer {key}"
        if body is not None:
            headers["content-type"] = "application/json"
        conn = self._new_connection()
        try:
            conn.request(method, path, body=body, headers=headers)
            res = conn.getresponse()
            data = res.read()
        except OSError as err:
            raise PlanLedgerError(0, f"plan-ledger server unreachable at {self._url.geturl()}: {err}") from None
        finally:
            conn.close()
        if res.status >= 400:
            try:
                message = json.loads(data).get("error", "")
            except ValueError:
                message = data.decode("utf-8", "replace")
            raise (NotFound if res.status == 404 else PlanLedgerError)(res.status, message)
        return res.status, data

    def _new_connection(self) -> http.client.HTTPConnection:
        cls = http.client.HTTPSConnection if self._url.scheme == "https" else http.client.HTTPConnection
        return cls(self._url.hostname, self._url.port, timeout=self._timeout)  # type: ignore[arg-type]

    # ---------------------------------------------------------------- sender thread

    def _run(self) -> None:
        backoff = 0.05
        while not self._stopping:
            self._wake.wait(0.05)
            self._wake.clear()
            while not self._stopping:
                if self._journal is not None and self._journal.backlog_bytes:
                    head = self._journal.peek()
                    if head is None:
                        break
                    end, events = head
                    # while the journal has a backlog, new events queue behind it, in order
                    self._spill_all()
                    if not events or self._post(events):
                        self._journal.commit(end)
                        backoff = 0.05
                        continue
                    backoff = self._pause(backoff)
                    continue
                batch = self._take()
                if not batch:
                    break
                if self._post(batch):
                    self._in_flight = 0
                    backoff = 0.05
                    continue
                if self._journal is not None:
                    self._journal_batch(batch)
                    self._in_flight = 0
                else:
                    self._buffer.extendleft(json.loads(b) for b in reversed(batch))
                    self._in_flight = 0
                    backoff = self._pause(backoff)

    def _pause(self, backoff: float) -> float:
        """Exponential backoff with full jitter; a close() cuts it short."""
        time.sleep(random.uniform(0, backoff)) if not self._closed else time.sleep(0.02)
        return min(backoff * 2, self._max_backoff)

    def _take(self) -> List[str]:
        batch: List[str] = []
        self._in_flight = 1
        while len(batch) < self._batch_size:
            try:
                batch.append(_dump(self._buffer.popleft()))
            except IndexError:
                break
        if not batch:
            self._in_flight = 0
        return batch

    def _spill_all(self) -> None:
        while self._buffer:
            batch: List[str] = []
            while len(batch) < self._batch_size:
                try:
                    batch.append(_dump(self._buffer.popleft()))
                except IndexError:
                    break
            if batch:
                self._journal_batch(batch)

    def _journal_batch(self, batch: List[str]) -> None:
        assert self._journal is not None
        if self._journal.append(batch):
            self._stats.journaled += len(batch)
        else:
            self._drop(len(batch), "the journal is full (max_journal_bytes)")

    def _post(self, events: List[str]) -> bool:
        """True when the server answered for the batch (202, or 4xx that a retry cannot fix)."""
        body = ("[" + ",".join(events) + "]").encode("utf-8")
        headers = {"content-type": "application/json", "accept": "application/json"}
        if self._ingest_key:
            headers["authorization"] = f"Bearer {self._ingest_key}"
        try:
            if self._conn is None:
                self._conn = self._new_connection()
            self._conn.request("POST", "/v1/events", body=body, headers=headers)
            res = self._conn.getresponse()
            data = res.read()
        except (OSError, http.client.HTTPException):
            if self._conn is not None:
                self._conn.close()
            self._conn = None
            return False
        if res.status == 202:
            answer = json.loads(data)
            self._stats.published += len(events)
            self._stats.accepted += answer.get("accepted", 0)
            if answer.get("invalid"):
                self._stats.rejected += answer["invalid"]
                for r in answer["results"]:
                    if r.get("status") == "invalid":
                        log.warning("plan-ledger refused an event: %s", "; ".join(v["message"] for v in r["violations"]))
            if answer.get("dropped"):
                return False  # the server could not keep some: send the batch again (duplicates are ignored)
            return True
        if res.status == 413 and len(events) > 1:
            half = len(events) // 2
            return self._post(events[:half]) and self._post(events[half:])
        if res.status in (401, 403):
            # a key problem is fixed by an operator, not by dropping events: keep them (journal) and retry
            self._warn(f"the server refused the ingest key ({res.status}: {data[:200].decode('utf-8', 'replace')}); events are kept and retried")
            return False
        if res.status in (400, 413):
            self._stats.rejected += len(events)
            log.warning("plan-ledger refused %d event(s) for good (%d: %s)", len(events), res.status, data[:200].decode("utf-8", "replace"))
            return True
        return False  # 5xx, 503 (Retry-After): retried

    def _warn(self, message: str) -> None:
        now = time.monotonic()
        if now - self._last_warn_log > 5.0:
            self._last_warn_log = now
            log.error("plan-ledger: %s", message)

    def _drop(self, count: int, why: str) -> None:
        self._stats.dropped += count
        now = time.monotonic()
        if now - self._last_drop_log > 5.0:  # one line per 5 s at most: a flood of drops must not flood the log
            self._last_drop_log = now
            log.error("plan-ledger dropped %d event(s): %s (dropped so far: %d)", count, why, self._stats.dropped)


_last_ms = -1
_counter = 0


def _uuid7() -> str:
    """A version 7 UUID (RFC 9562) as text: the Unix time in ms, a counter, 62 random bits.

    Ids stamped close together are neighbours in the server's ``event_id`` index, so a batch's
    inserts touch a few index pages instead of one random page each (as the TypeScript
    publisher's, src/publisher/event-id.ts). Within one ms a 12-bit counter, started at a random
    value below 2048, keeps this process's ids in stamping order; past 4096 in one ms, or when the
    clock steps back, the time borrows the next ms. eventId needs uniqueness, not secrecy: the
    random bits come from ``random`` (seeded from os.urandom, reseeded in a forked child) instead
    of one ``os.urandom`` system call per event.
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


def _dump(event: JsonObject) -> str:
    return json.dumps(event, separators=(",", ":"), ensure_ascii=False)


def _q(part: str) -> str:
    return urllib.parse.quote(part, safe="")
