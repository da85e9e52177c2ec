"""Append-only spill journal: batches the server could not take yet, replayed in order later.

One JSON array (a batch of events) per line in ``journal.jsonl``; ``journal.offset`` holds how many
bytes of it were delivered (written atomically). A batch delivered but not yet marked is sent again
after a crash, which changes nothing: the server and the worker deduplicate by ``eventId``.

Each line is written with one ``write`` and fsynced before ``append`` returns. A kill during the
write can leave the last line torn (no newline): the next ``Journal`` on the directory cuts those
bytes off before appending, counts them (``torn_bytes``) and logs them, so a new line is never glued
to a torn one. A failed write (disk full) is undone the same way.

A process forked from one that owns a journal keeps its own in ``<journal_dir>/fork-<pid>``; the
owner of ``<journal_dir>`` (this process or any later one) adopts such a directory once no live
process holds its lock: its undelivered lines are appended to the owner's journal, then it is removed.

``unconfirmed.ids`` holds the ids of events a closed client delivered without seeing them stored
(one per line, replaced whole at each close); the next client on the directory, or the owner that
adopts a fork's directory, waits for them in ``flush(stored=True)``.
"""
from __future__ import annotations

import errno
import json
import logging
import os
import threading
import time
from typing import List, Optional, Tuple

from ._wire import encode

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no lock, one client per directory by convention
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger("plan_ledger")

FORK_PREFIX = "fork-"
_DATA = "journal.jsonl"
_OFFSET = "journal.offset"
_LOCK = "journal.lock"
_UNCONFIRMED = "unconfirmed.ids"
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)

Item = Tuple[Optional[str], bytes]


class JournalLockedError(RuntimeError):
    """Another live client owns this journal directory."""


def _try_lock(fd: int) -> bool:
    if fcntl is None:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _last_newline_end(fd: int, size: int) -> int:
    """The length of the file up to and including its last newline (0 when it has none)."""
    pos = size
    while pos > 0:
        start = max(0, pos - 65536)
        chunk = os.pread(fd, pos - start, start)
        i = chunk.rfind(b"\n")
        if i >= 0:
            return start + i + 1
        pos = start
    return 0


def _read_ids(path: str) -> List[str]:
    """The event ids kept in ``path`` (one per line; anything else skipped), or none."""
    try:
        with open(path, "r", encoding="ascii", errors="replace") as f:
            lines = f.read().split("\n")
    except OSError:
        return []
    return [line for line in lines if 0 < len(line) <= 128 and line.isprintable()]


class Journal:
    """A directory owned by one client (an exclusive lock file enforces it)."""

    def __init__(self, directory: str, max_bytes: int, adopt_forks: bool = True, lock_wait: float = 0.0) -> None:
        self.directory = os.path.abspath(directory)
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._lock_fd = self._acquire(lock_wait)
        self._data_path = os.path.join(self.directory, _DATA)
        self._offset_path = os.path.join(self.directory, _OFFSET)
        try:
            self._fd = os.open(self._data_path, os.O_RDWR | os.O_CREAT | _O_CLOEXEC, 0o644)
        except OSError:
            os.close(self._lock_fd)
            raise
        self._size = os.fstat(self._fd).st_size
        #: bytes cut from the end of the file on open (a torn last line) or skipped as unreadable
        self.torn_bytes = self._cut_torn_tail()
        self._offset = min(self._read_offset(), self._size)
        #: bytes written but not yet delivered (read without the lock: an int is replaced atomically)
        self.backlog = self._size - self._offset
        self.closed = False
        self._unconfirmed_path = os.path.join(self.directory, _UNCONFIRMED)
        self._unconfirmed: List[str] = _read_ids(self._unconfirmed_path)
        #: bytes taken over from journals of forked processes that are gone
        self.adopted_bytes = self.adopt_forks() if adopt_forks else 0

    def _acquire(self, lock_wait: float) -> int:
        deadline = time.monotonic() + lock_wait
        while True:
            os.makedirs(self.directory, exist_ok=True)
            path = os.path.join(self.directory, _LOCK)
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | _O_CLOEXEC, 0o644)
            except FileNotFoundError:
                continue  # the directory was adopted and removed between the two calls
            if _try_lock(fd):
                try:
                    same = os.stat(path).st_ino == os.fstat(fd).st_ino
                except FileNotFoundError:
                    same = False
                if same:
                    return fd
                os.close(fd)  # adopted and removed under us: make the directory again
                continue
            os.close(fd)
            if time.monotonic() >= deadline:
                raise JournalLockedError(
                    f"journal directory {self.directory} is used by another live client; "
                    "give each client its own journal_dir"
                )
            time.sleep(0.01)

    def _read_offset(self) -> int:
        try:
            with open(self._offset_path, "r", encoding="ascii") as f:
                return max(int(f.read().strip() or "0"), 0)
        except (OSError, ValueError):
            return 0

    def _cut_torn_tail(self) -> int:
        if self._size == 0 or os.pread(self._fd, 1, self._size - 1) == b"\n":
            return 0
        keep = _last_newline_end(self._fd, self._size)
        cut = self._size - keep
        os.ftruncate(self._fd, keep)
        os.fsync(self._fd)
        self._size = keep
        log.warning(
            "plan-ledger journal %s: cut %d byte(s) of a torn last line (a process was killed while writing it); "
            "the events in them are lost",
            self.directory,
            cut,
        )
        return cut

    @property
    def size(self) -> int:
        return self._size

    def append(self, events: List[bytes]) -> bool:
        """Writes one batch (event JSON bytes) and fsyncs it; False when it would pass ``max_bytes``
        of undelivered data. Raises OSError when the write fails (nothing of it is kept)."""
        return self.append_raw(b"[" + b",".join(events) + b"]\n")

    def append_raw(self, lines: bytes) -> bool:
        """Appends whole lines (each ending with a newline)."""
        with self._lock:
            if self.closed:
                raise OSError(errno.EBADF, "the journal is closed")
            if self.backlog + len(lines) > self.max_bytes:
                return False
            before = self._size
            try:
                os.lseek(self._fd, before, os.SEEK_SET)
                _write_all(self._fd, lines)
                os.fsync(self._fd)
            except OSError:
                try:  # no torn line may stay behind a failed write
                    os.ftruncate(self._fd, before)
                except OSError:
                    pass
                raise
            self._size = before + len(lines)
            self.backlog = self._size - self._offset
            return True

    def peek(self) -> Optional[Tuple[int, List[Item]]]:
        """The oldest undelivered batch as (its end offset, its events), or None when drained.
        An unreadable line comes back with no events (the caller commits past it)."""
        with self._lock:
            if self.closed or self._offset >= self._size:
                return None
            start = self._offset
            chunk = 1 << 16
            line = bytearray()
            while True:
                part = os.pread(self._fd, chunk, start + len(line))
                if not part:
                    break
                i = part.find(b"\n")
                if i >= 0:
                    line += part[: i + 1]
                    break
                line += part
                chunk = min(chunk * 2, 8 << 20)
            data = bytes(line)
            end = start + len(data)
        if not data.endswith(b"\n"):
            return None
        try:
            batch = json.loads(data)
            if not isinstance(batch, list):
                raise ValueError("not a JSON array")
            items: List[Item] = [(e.get("eventId") if isinstance(e, dict) else None, encode(e)) for e in batch]
        except (ValueError, TypeError) as err:
            log.error(
                "plan-ledger journal %s: skipped an unreadable line of %d bytes at offset %d (%s)",
                self.directory,
                len(data),
                start,
                err,
            )
            self.torn_bytes += len(data)
            items = []
        return end, items

    def commit(self, end: int) -> None:
        """Marks everything before ``end`` delivered; empties the file once all is delivered."""
        with self._lock:
            if self.closed:
                return
            self._offset = end
            if self._offset >= self._size:
                os.ftruncate(self._fd, 0)
                self._size = 0
                self._offset = 0
            self.backlog = self._size - self._offset
            tmp = self._offset_path + ".tmp"
            with open(tmp, "w", encoding="ascii") as f:
                f.write(str(self._offset))
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self._offset_path)

    def take_unconfirmed(self) -> List[str]:
        """The ids a previous client on this directory delivered without seeing them stored (and those
        of adopted forks' journals), once: the file stays until ``save_unconfirmed`` replaces it."""
        with self._lock:
            ids, self._unconfirmed = self._unconfirmed, []
        return ids

    def save_unconfirmed(self, ids: List[str]) -> None:
        """Replaces the kept ids (written to a temporary file, fsynced, renamed: all or nothing); none
        removes the file."""
        with self._lock:
            if not ids:
                try:
                    os.unlink(self._unconfirmed_path)
                except FileNotFoundError:
                    pass
                return
            tmp = self._unconfirmed_path + ".tmp"
            with open(tmp, "w", encoding="ascii") as f:
                f.write("\n".join(ids) + "\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self._unconfirmed_path)

    def adopt_forks(self) -> int:
        """Takes over the journals of forked processes that are gone (see the module's doc)."""
        try:
            names = sorted(n for n in os.listdir(self.directory) if n.startswith(FORK_PREFIX))
        except OSError:
            return 0
        adopted = 0
        for name in names:
            d = os.path.join(self.directory, name)
            try:
                fd = os.open(os.path.join(d, _LOCK), os.O_RDWR | _O_CLOEXEC)
            except OSError:
                continue  # not a journal, or being made right now
            try:
                if not _try_lock(fd):
                    continue  # its process is alive
                adopted += self._adopt(d, name)
            except OSError as err:
                log.error(
                    "plan-ledger journal %s: could not adopt %s (%s); it is left in place", self.directory, d, err
                )
            finally:
                os.close(fd)
        return adopted

    def _adopt(self, d: str, name: str) -> int:
        data_path = os.path.join(d, _DATA)
        lines = b""
        if os.path.exists(data_path):
            try:
                with open(os.path.join(d, _OFFSET), "r", encoding="ascii") as f:
                    offset = max(int(f.read().strip() or "0"), 0)
            except (OSError, ValueError):
                offset = 0
            with open(data_path, "rb") as f:
                f.seek(offset)
                lines = f.read()
            lines = lines[: lines.rfind(b"\n") + 1]
        if lines and not self.append_raw(lines):
            log.error(
                "plan-ledger journal %s: no room to adopt %s (%d bytes, max_journal_bytes); it is left in place",
                self.directory,
                d,
                len(lines),
            )
            return 0
        ids = _read_ids(os.path.join(d, _UNCONFIRMED))
        if ids:
            with self._lock:
                self._unconfirmed.extend(ids)
        for f_name in (_DATA, _OFFSET, _OFFSET + ".tmp", _UNCONFIRMED, _UNCONFIRMED + ".tmp", _LOCK):
            try:
                os.unlink(os.path.join(d, f_name))
            except FileNotFoundError:
                pass
        try:
            os.rmdir(d)
        except OSError:
            pass
        if lines:
            log.info(
                "plan-ledger journal %s: adopted %d undelivered byte(s) left by process %s",
                self.directory,
                len(lines),
                name[len(FORK_PREFIX) :],
            )
        return len(lines)

    def release_in_child(self) -> None:
        """In a forked child: let go of the parent's journal without touching it (its lock stays the parent's)."""
        self.closed = True
        for fd in (self._fd, self._lock_fd):
            try:
                os.close(fd)
            except OSError:
                pass

    def close(self, remove_if_empty: bool = False) -> None:
        with self._lock:
            if self.closed:
                return
            self.closed = True
            empty = self._size == 0 and not os.path.exists(self._unconfirmed_path)
            os.close(self._fd)
            if remove_if_empty and empty:
                for f_name in (_DATA, _OFFSET):
                    try:
                        os.unlink(os.path.join(self.directory, f_name))
                    except OSError:
                        pass
                try:
                    os.unlink(os.path.join(self.directory, _LOCK))
                    os.rmdir(self.directory)
                except OSError:
                    pass
            if fcntl is not None:
                try:
                    fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
                except OSError:
                    pass
            os.close(self._lock_fd)
