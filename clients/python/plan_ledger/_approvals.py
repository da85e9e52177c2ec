"""Approvals, the executor's side (docs/approvals.md): ``request_approval`` publishes ``approval.requested``
with the arguments' digest and returns a ``PendingApproval``, whose ``wait()`` long-polls the server until
the approval is decided or expires, and whose ``consume()`` takes the decision, once, before the call runs.

``_Approvals`` is a part of ``PlanLedgerClient``, which holds the options and the ids declared below.
"""
from __future__ import annotations

import datetime
import json
import random
import time
import urllib.parse
import uuid
from typing import Any, Optional, Union

from ._events import JsonObject, Plan, PublishResult
from ._reads import _Reads
from .digest import args_digest as digest_of
from .errors import ApprovalRefused, NotFound, PlanLedgerError
from .results import Approval

_MAX_HOLD_MS = 60_000  # the longest hold GET /v1/approvals/{id}?waitMs= grants
_ANSWER_GRACE = 30.0  # seconds an answer may take beyond the hold asked for
_RETRYABLE = (0, 502, 503, 504)  # unreachable, or a proxy in front of a restarting server
_REQUESTED = object()  # consume()'s default: the arguments the approval was requested for


class PendingApproval:
    """A published ``approval.requested``: wait for its decision, then consume it before running the call.

    A restarted executor rebuilds it with ``PendingApproval(client, approval_id, args_digest(args))``."""

    def __init__(
        self,
        client: "_Approvals",
        approval_id: str,
        args_digest: str,
        expires_at: Optional[str] = None,
        published: Optional[PublishResult] = None,
    ) -> None:
        self._client = client
        self.approval_id = approval_id
        self.args_digest = args_digest
        self.expires_at = expires_at
        self.published = published

    def wait(self, timeout: Optional[float] = None) -> Approval:
        """The approval once it is decided (``status`` decided: see ``decision``) or expired, or still pending
        after ``timeout`` seconds (None: until it is decided or expires). See ``wait_approval``."""
        return self._client.wait_approval(self.approval_id, timeout)

    def consume(self, args: Any = _REQUESTED, consumer: Optional[str] = None) -> Approval:
        """Takes the decision, once: returns the approval (``decision``, ``feedback``...) and only then may the
        call run. ``args``: the arguments about to run (after an edit, the edited ones; by default the ones
        requested). Raises ``ApprovalRefused`` with its ``reason`` otherwise. See ``consume_approval``."""
        digest = self.args_digest if args is _REQUESTED else digest_of(args)
        return self._client.consume_approval(self.approval_id, args_digest=digest, consumer=consumer)

    def __repr__(self) -> str:
        return f"PendingApproval({self.approval_id!r}, expires_at={self.expires_at!r})"


class _Approvals(_Reads):
    """The approval helpers of the client (see the module's docstring); its requests go through ``_Reads``."""

    def _typed(
        self, type_: str, plan: Plan, payload: JsonObject, seq: Optional[int], event_id: Optional[str]
    ) -> PublishResult:  # pragma: no cover - the client's (_EventHelpers)
        raise NotImplementedError

    def request_approval(
        self,
        plan: Plan,
        step_id: str,
        args: Any,
        *,
        tool: Optional[str] = None,
        approval_id: Optional[str] = None,
        expires_in: float = 3600.0,
        expires_at: Union[str, datetime.datetime, None] = None,
        assignee: Optional[str] = None,
        reason: Optional[str] = None,
        seq: Optional[int] = None,
    ) -> PendingApproval:
        """Publishes ``approval.requested`` for a call of ``tool`` with ``args`` (its ``argsDigest``: the SHA-256
        of their canonical JSON, ``plan_ledger.digest.args_digest``), like every event: queued, not yet stored.
        ``approval_id`` defaults to ``appr_`` and a random UUID; the approval expires ``expires_in`` seconds
        from now, or at ``expires_at`` (a timezone-aware datetime or ISO-8601 UTC text). Raises ``ValueError``
        when the contract refuses the event, ``PlanLedgerError`` when it was not queued (client closed, buffer
        full)."""
        digest = digest_of(args)
        approval_id = approval_id if approval_id is not None else f"appr_{uuid.uuid4()}"
        if expires_at is None:
            expires = _iso(datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=expires_in))
        elif isinstance(expires_at, datetime.datetime):
            if expires_at.tzinfo is None:
                raise ValueError("request_approval: expires_at must be timezone-aware (e.g. datetime.timezone.utc)")
            expires = _iso(expires_at)
        else:
            expires = expires_at
        payload: JsonObject = {
            "approvalId": approval_id,
            "stepId": step_id,
            "tool": tool,
            "argsDigest": digest,
            "expiresAt": expires,
            "assignee": assignee,
            "reason": reason,
        }
        result = self._typed("approval.requested", plan, payload, seq, None)
        if not result.ok:
            why = "; ".join(f"{v.path} {v.message}" for v in result.violations)
            if result.reason == "invalid":
                raise ValueError(f"request_approval: approval.requested breaks the contract: {why}")
            raise PlanLedgerError(0, f"request_approval: approval.requested was not queued ({result.reason})")
        return PendingApproval(self, approval_id, digest, expires, result)

    def approval(self, approval_id: str) -> Approval:
        """The approval as stored now. Raises ``NotFound`` when no request of that id is stored."""
        return self._get_approval(approval_id, 0)

    def wait_approval(self, approval_id: str, timeout: Optional[float] = None) -> Approval:
        """Long-polls ``GET /v1/approvals/{id}?waitMs=`` (the server holds each request up to 60 s and answers
        when the approval is decided or expires), again while it is pending, until ``timeout`` seconds (None:
        no limit but the approval's expiry). Returns the approval: ``status`` decided, expired, consumed, or
        pending at the timeout. A request not stored yet is waited for the same way; ``ApprovalRefused``
        (``reason`` not_found) when it still is not at the timeout. Server unreachable, 502-504: retried with
        backoff within the timeout; other errors raise ``PlanLedgerError``."""
        deadline = None if timeout is None else time.monotonic() + timeout
        failures = 0
        while True:
            left = _MAX_HOLD_MS if deadline is None else int(max(0.0, deadline - time.monotonic()) * 1000)
            hold = min(_MAX_HOLD_MS, left)
            try:
                view = self._get_approval(approval_id, hold)
            except NotFound as err:
                if _over(deadline):
                    raise ApprovalRefused(404, err.message, "not_found") from None
                failures = 0
                continue
            except PlanLedgerError as err:
                if err.status not in _RETRYABLE or _over(deadline):
                    raise
                failures += 1
                pause = min(5.0, 0.25 * 2 ** min(failures - 1, 5)) * (0.5 + random.random() / 2)
                time.sleep(pause if deadline is None else max(0.0, min(pause, deadline - time.monotonic())))
                continue
            if view.status != "pending" or _over(deadline):
                return view
            failures = 0

    def consume_approval(
        self,
        approval_id: str,
        args: Any = None,
        *,
        args_digest: Optional[str] = None,
        consumer: Optional[str] = None,
    ) -> Approval:
        """``POST /v1/approvals/{id}/consume`` with the digest of ``args`` (or ``args_digest``): the decision,
        once (run the call only when this returns). Raises ``ApprovalRefused`` with the ledger's ``reason``
        (409: already_consumed, rejected, expired, undecided, args_mismatch; 404: not_found). Not retried: a
        consume whose answer was lost may have consumed the approval, and the next is then refused."""
        digest = args_digest if args_digest is not None else digest_of(args)
        body: JsonObject = {"argsDigest": digest}
        if consumer is not None:
            body["consumer"] = consumer
        path = f"/v1/approvals/{urllib.parse.quote(approval_id, safe='')}/consume"
        try:
            data = self._request("POST", path, json.dumps(body).encode("utf-8"), self._ingest_key)[1]
        except PlanLedgerError as err:
            if err.status not in (404, 409):
                raise
            answer = err.answer if isinstance(err.answer, dict) else {}
            raise ApprovalRefused(
                err.status, err.message, str(answer.get("reason") or "not_found"), answer.get("approval")
            ) from None
        return Approval.from_json(json.loads(data))

    def _get_approval(self, approval_id: str, wait_ms: int) -> Approval:
        path = f"/v1/approvals/{urllib.parse.quote(approval_id, safe='')}?waitMs={int(wait_ms)}"
        key = self._ingest_key or self._read_key or self._admin_key
        data = self._request("GET", path, None, key, timeout=wait_ms / 1000 + _ANSWER_GRACE)[1]
        return Approval.from_json(json.loads(data))


def _over(deadline: Optional[float]) -> bool:
    return deadline is not None and time.monotonic() >= deadline


def _iso(at: datetime.datetime) -> str:
    return at.astimezone(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
