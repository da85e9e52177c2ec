"""The read helpers (``GET`` a plan, a session, a resume point...), fork and replay (admin key), and
``flush(stored=True)``'s wait for delivered events to be applied (``POST /v1/events/status``).

``_Reads`` is a part of ``PlanLedgerClient``, which holds the options and the ids declared below.
"""
from __future__ import annotations

import http.client
import json
import logging
import threading
import time
import urllib.parse
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from ._events import JsonObject, _steps
from ._http import connect
from ._sender import Stats
from .errors import _ERRORS, NotFound, PlanLedgerError
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

_STATUS_IDS = 10_000  # most ids one POST /v1/events/status takes


class _Reads:
    """The read side of the client (see the module's docstring)."""

    _url: urllib.parse.SplitResult
    _ingest_key: Optional[str]
    _read_key: Optional[str]
    _admin_key: Optional[str]
    _timeout: float
    _track_lock: threading.RLock
    _unconfirmed: Dict[str, None]
    _stats: Stats

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
                raise PlanLedgerError(
                    404,
                    "the server has no POST /v1/events/status (it is older than this client): flush(stored=True) "
                    "cannot confirm storage",
                ) from None
            except PlanLedgerError as err:
                if err.status not in (0, 502, 503, 504):
                    raise
                time.sleep(min(0.2, max(deadline - time.monotonic(), 0)))
                continue
            done = set(status.applied) | set(status.refused)
            if status.refused:
                self._stats.dead_lettered += len(status.refused)
                log.warning(
                    "plan-ledger: the worker refused %d delivered event(s) (dead-lettered; their seqs voided), e.g. %s",
                    len(status.refused),
                    ", ".join(status.refused[:5]),
                )
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
        """One page of a session's plans, newest first (``status``: planning, executing, completed, failed,
        cancelled...)."""
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
        return self._request(
            "GET",
            f"/v1/plans/{_q(plan_id)}/steps/{_q(str(step))}/output",
            None,
            self._read_key or self._admin_key,
            accept="text/plain",
        )[1].decode("utf-8")

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
            raise ValueError(
                "fork_plan: give exactly one of from_layer=N, from_checkpoint=ID, from_failure=True (or use "
                "replay_plan)"
            )
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

    def _fork(
        self,
        kind: str,
        plan_id: str,
        body: JsonObject,
        new_plan_id: Optional[str],
        session_id: Optional[str],
        edit_steps: Optional[Iterable[Any]],
    ) -> ForkOutcome:
        if not self._admin_key:
            raise ValueError(
                f"{kind}_plan needs an admin key: create the client with admin_key= (a key of the server's "
                "HTTP_ADMIN_KEYS)"
            )
        if new_plan_id is not None:
            body["planId"] = new_plan_id
        if session_id is not None:
            body["sessionId"] = session_id
        if edit_steps is not None:
            body["editSteps"] = _steps(edit_steps)
        data = json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
        return ForkOutcome.from_json(
            json.loads(self._request("POST", f"/v1/plans/{_q(plan_id)}/{kind}", data, self._admin_key)[1])
        )

    def _get(self, path: str) -> JsonObject:
        answer: JsonObject = json.loads(self._request("GET", path, None, self._read_key or self._admin_key)[1])
        return answer

    def _request(
        self,
        method: str,
        path: str,
        body: Optional[bytes],
        key: Optional[str],
        accept: str = "application/json",
        timeout: Optional[float] = None,
    ) -> Tuple[int, bytes]:
        headers = {"accept": accept}
        if key:
            headers["authorization"] = f"Bearer {key}"
        if body is not None:
            headers["content-type"] = "application/json"
        conn = connect(self._url, timeout or self._timeout)
        try:
            conn.request(method, path, body=body, headers=headers)
            res = conn.getresponse()
            data = res.read()
        except (OSError, http.client.HTTPException) as err:
            raise PlanLedgerError(0, f"plan-ledger server unreachable at {self._url.geturl()}: {err}") from None
        finally:
            conn.close()
        if res.status >= 400:
            answer: Any = None
            try:
                answer = json.loads(data)
                message = answer.get("error", "")
            except (ValueError, AttributeError):
                message = data.decode("utf-8", "replace")
            raise _ERRORS.get(res.status, PlanLedgerError)(res.status, message, answer)
        return res.status, data


def _q(part: str) -> str:
    return urllib.parse.quote(part, safe="")
