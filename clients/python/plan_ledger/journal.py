"""Append-only spill journal: batches the server could not take yet, replayed in order later.

One JSON array (a batch) per line in ``journal.jsonl``; ``journal.offset`` holds how many bytes of
it were delivered (written atomically). A batch delivered but not yet marked is sent again after a
crash, which changes nothing: the server and the worker deduplicate by ``eventId``.
"""
from __future__ import annotations

import json
import os
import threading
from typing import List, Optional, Tuple

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no lock, one client per directory by convention
    fcntl = None  # type: ignore[assignment]


class JournalLockedError(RuntimeError):
    """Another live client owns this journal directory."""


class Journal:
    """A directory owned by one client (an exclusive lock file enforces it)."""

    def __init__(self, directory: str, max_bytes: int) -> None:
        self.directory = os.path.abspath(directory)
        self.max_bytes = max_bytes
        os.makedirs(self.directory, exist_ok=True)
        self._lock = threading.Lock()
        self._lock_file = open(os.path.join(self.directory, "journal.lock"), "a+")
        if fcntl is not None:
            try:
                fcntl.flock(self._lock_file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                self._lock_file.close()
                raise JournalLockedError(f"journal directory {self.directory} is used by another live client; give each client its own journal_dir") from None
        self._data_path = os.path.join(self.directory, "journal.jsonl")
        self._offset_path = os.path.join(self.directory, "journal.offset")
        self._file = open(self._data_path, "ab")
        self._offset = self._read_offset()
        self._backlog_at_close = 0

    def _read_offset(self) -> int:
        try:
            with open(self._offset_path, "r", encoding="ascii") as f:
                return int(f.read().strip() or "0")
        except (OSError, ValueError):
            return 0

    @property
    def size(self) -> int:
        return self._file.tell()

    @property
    def backlog_bytes(self) -> int:
        """Bytes written but not yet delivered."""
        with self._lock:
            if self._file.closed:
                return self._backlog_at_close
            return max(self._file.tell() - self._offset, 0)

    def append(self, events: List[str]) -> bool:
        """Writes one batch (a list of event JSON texts); False when it would pass ``max_bytes``."""
        line = ("[" + ",".join(events) + "]\n").encode("utf-8")
        with self._lock:
            if self._file.tell() - self._offset + len(line) > self.max_bytes:
                return False
            self._file.write(line)
            self._file.flush()
            os.fsync(self._file.fileno())
            return True

    def peek(self) -> Optional[Tuple[int, List[str]]]:
        """The oldest undelivered batch as (its end offset, its events), or None when drained."""
        with self._lock:
            if self._offset >= self._file.tell():
                return None
            with open(self._data_path, "rb") as f:
                f.seek(self._offset)
                line = f.readline()
            end = self._offset + len(line)
        if not line.endswith(b"\n"):
            return None  # a torn last line (crash mid-write): it was never acknowledged to anyone
        try:
            events = [json.dumps(e, separators=(",", ":"), ensure_ascii=False) for e in json.loads(line)]
        except ValueError:
            events = []  # unreadable record: skipped by the caller's commit
        return end, events

    def commit(self, end: int) -> None:
        """Marks everything before ``end`` delivered; empties the files once all is delivered."""
        with self._lock:
            self._offset = end
            if self._offset >= self._file.tell():
                self._file.truncate(0)
                self._file.seek(0)
                self._offset = 0
            tmp = self._offset_path + ".tmp"
            with open(tmp, "w", encoding="ascii") as f:
                f.write(str(self._offset))
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self._offset_path)

    def close(self) -> None:
        with self._lock:
            if self._file.closed:
                return
            self._backlog_at_close = max(self._file.tell() - self._offset, 0)
            self._file.close()
            if fcntl is not None:
                fcntl.flock(self._lock_file.fileno(), fcntl.LOCK_UN)
            self._lock_file.close()
