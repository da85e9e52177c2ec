"""The client's life: the state a fork resets, ``close()`` (idempotent, from any thread or a signal
handler), the SIGTERM handler, a forked child's own sender and journal, and the close of every live
client at the interpreter's exit.

``_Lifecycle`` is a part of ``PlanLedgerClient``, which sets the options declared below.
"""
from __future__ import annotations

import atexit
import collections
import functools
import os
import signal
import threading
import time
import weakref
from typing import Any, Callable, Optional

from ._sender import Stats, _Sender, log
from .journal import FORK_PREFIX, Journal

_LIVE: "weakref.WeakSet[_Lifecycle]" = weakref.WeakSet()


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
        getattr(threading, "_register_atexit")(_close_all_at_exit)
    except RuntimeError:  # pragma: no cover - imported during interpreter shutdown
        pass
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class _Lifecycle(_Sender):
    """Start, close and fork (see the module's docstring)."""

    _exit_timeout: float
    _journal_root: Optional[str]
    _max_journal_bytes: int
    _closed: bool
    _close_result: Optional[bool]
    _fork_pending: bool

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
        self._buffer = collections.deque()
        self._in_hand = None
        self._abandoned = False
        self._unconfirmed = {}
        self._stats = Stats()
        self._conn = None
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

    # ---------------------------------------------------------------- close

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
            self._wait_for_close(functools.partial(_joined, thread, 0.05))
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
            log.info(
                "plan-ledger: client used in forked process %d: it sends with a sender thread of its own and %s; "
                "the parent's buffered events stay the parent's",
                os.getpid(),
                where,
            )
            self._start_sender()
            _LIVE.add(self)
            self._fork_pending = False
