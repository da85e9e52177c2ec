"""The sender thread: batching, posting to ``POST /v1/events``, back-off and probing, the journal's
group commit, and the ids of delivered events kept for ``flush(stored=True)``.

``_Sender`` is a part of ``PlanLedgerClient``, which creates the state declared below
(``_init_runtime``) and starts the thread (``_run``).
"""
from __future__ import annotations

import http.client
import json
import logging
import os
import random
import re
import threading
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any, Deque, Dict, Iterable, List, Optional, Tuple

from ._http import PEER_CLOSED, closed_by_peer, connect
from .journal import FORK_PREFIX, Journal

log = logging.getLogger("plan_ledger")

Item = Tuple[Optional[str], bytes]  # (eventId, the event's JSON bytes)

_BATCH_BYTES = 8 << 20  # below the server's default 16 MiB body limit
_FAST_202 = re.compile(rb'\{"accepted":(\d+),"invalid":0,"dropped":0,').match


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


def _show(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class _Sender:
    """The sender thread's side of the client (see the module's docstring)."""

    # options
    _url: urllib.parse.SplitResult
    _ingest_key: Optional[str]
    _batch_size: int
    _timeout: float
    _max_backoff: float
    _commit_s: float
    _probe_interval: float
    _max_unconfirmed: int
    _journal: Optional[Journal]
    _last_log: Dict[str, float]
    # runtime state (PlanLedgerClient._init_runtime)
    _count_lock: threading.RLock
    _hand_lock: threading.Lock
    _leftover_lock: threading.Lock
    _track_lock: threading.RLock
    _wake: threading.Event
    _close_done: threading.Event
    _buffer: Deque[Item]
    _in_hand: Optional[List[Item]]  # events out of the buffer, not yet delivered nor journaled
    _abandoned: bool
    _unconfirmed: Dict[str, None]
    _stats: Stats
    _conn: Optional[http.client.HTTPConnection]
    _sleeping: bool
    _retry_now: bool
    _closing: bool
    _stopping: bool
    _reachable: bool
    _next_probe: float
    _next_post: float
    _backoff: float
    _last_commit: float
    _next_adopt: float

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
            self._log_rarely(
                "sender",
                logging.ERROR,
                "plan-ledger sender thread survived an unexpected error (%d so far); its batch is kept",
                self._stats.sender_errors,
                exc_info=err,
            )
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
                self._next_probe = time.monotonic() + (
                    min(0.2, self._probe_interval) if self._closing and journal is None else self._probe_interval
                )
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
        if (
            self._closing
            and not self._buffer
            and self._in_hand is None
            and (journal is None or not journal.backlog or not up)
        ):
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
            until = min(
                until, max(self._last_commit + self._commit_s, now + 0.001) if self._buffer else now + self._commit_s
            )
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
        conn = connect(self._url, min(self._timeout, 2.0))
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
            self._log_rarely(
                "down",
                logging.WARNING,
                "plan-ledger server unreachable at %s: events go to %s; probing every %.1f s",
                self._url.geturl(),
                "the journal" if self._journal else "memory",
                self._probe_interval,
            )
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
            if conn is not None and closed_by_peer(conn):
                conn.close()
                conn = self._conn = None
            reused = conn is not None and conn.sock is not None
            try:
                if conn is None:
                    conn = self._conn = connect(self._url, self._timeout)
                conn.request("POST", "/v1/events", body=body, headers=headers)
                res = conn.getresponse()
                data = res.read()
                break
            except (OSError, http.client.HTTPException) as err:
                if attempt == 1 and reused and conn is not None and isinstance(err, PEER_CLOSED):
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
            self._log_rarely(
                "key",
                logging.ERROR,
                "plan-ledger: the server refused the ingest key (%d: %s); events are kept and retried",
                status,
                data[:200].decode("utf-8", "replace"),
            )
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
            _show(e.get("type")),
            _show(e.get("planId")),
            _show(e.get("seq")),
            _show(e.get("eventId")),
            "; ".join(violations[:5]),
            self._stats.rejected + 1,
        )

    def _adopt_unconfirmed(self, journal: Journal) -> None:
        """Ids a previous client on this directory (or a forked child's, adopted) delivered without
        seeing them stored: ``flush(stored=True)`` waits for them too."""
        ids = journal.take_unconfirmed()
        if ids:
            self._track(ids)
            log.info(
                "plan-ledger: %d event(s) a previous client on %s delivered are not yet confirmed stored; "
                "flush(stored=True) waits for them",
                len(ids),
                journal.directory,
            )

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

    # ---------------------------------------------------------------- at close

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
            log.warning(
                "plan-ledger: the ids of %d delivered event(s) not yet confirmed stored could not be kept in %s "
                "(%s); the next client's flush(stored=True) will not wait for them",
                len(ids),
                journal.directory,
                err,
            )

    # ---------------------------------------------------------------- logs

    def _log_rarely(
        self, kind: str, level: int, message: str, *args: Any, exc_info: Optional[BaseException] = None
    ) -> None:
        """At most one line per kind per 5 s: a flood of refusals or drops must not flood the log."""
        now = time.monotonic()
        if now - self._last_log.get(kind, -10.0) > 5.0:
            self._last_log[kind] = now
            log.log(level, message, *args, exc_info=exc_info)

    def _drop(self, count: int, why: str) -> None:
        with self._count_lock:
            self._stats.dropped += count
        self._log_rarely(
            "drop",
            logging.ERROR,
            "plan-ledger dropped %d event(s): %s (dropped so far: %d)",
            count,
            why,
            self._stats.dropped,
        )
