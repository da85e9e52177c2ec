"""``AsyncPlanLedgerClient``: the same client for executors that run on an asyncio event loop.

``publish()``, the typed helpers and ``request_approval`` stay synchronous (they never block: stamp, check,
encode, queue); ``flush``, ``close``, ``events_status``, the reads and an approval's ``wait`` and
``consume`` are coroutines. Under the hood it is one
``PlanLedgerClient`` (the same encoding, checking, batching, sending and journal); the coroutines run
its blocking calls in the loop's default executor, so the loop never waits on the network or the disk.
"""
from __future__ import annotations

import asyncio
import functools
from typing import Any, Callable, Iterable, List, Mapping, Optional, Sequence, TypeVar, Union

from ._approvals import _REQUESTED, PendingApproval
from ._events import Plan, PublishResult, _EventHelpers
from .client import PlanLedgerClient, Stats
from .results import (
    Approval,
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

T = TypeVar("T")


class AsyncPendingApproval:
    """``PendingApproval`` for the loop: ``wait`` and ``consume`` are coroutines (a wait holds one thread of
    the loop's default executor while the server holds the request)."""

    def __init__(self, client: "AsyncPlanLedgerClient", pending: PendingApproval) -> None:
        self._client = client
        self.pending = pending
        self.approval_id = pending.approval_id
        self.args_digest = pending.args_digest
        self.expires_at = pending.expires_at
        self.published = pending.published

    async def wait(self, timeout: Optional[float] = None) -> Approval:
        """As ``PendingApproval.wait``."""
        return await self._client._run(self.pending.wait, timeout)

    async def consume(self, args: Any = _REQUESTED, consumer: Optional[str] = None) -> Approval:
        """As ``PendingApproval.consume``."""
        return await self._client._run(self.pending.consume, args, consumer)


class AsyncPlanLedgerClient(_EventHelpers):
    """Takes the arguments of ``PlanLedgerClient``.

    Example::

        async with AsyncPlanLedgerClient("http://127.0.0.1:8080", ingest_key=KEY, read_key=RKEY) as ledger:
            ledger.step_started(plan, "s1")              # synchronous, never blocks
            await ledger.flush(10, stored=True)          # read your own writes
            active = await ledger.active_plan("session_7")
    """

    def __init__(self, base_url: str, **options: Any) -> None:
        self._client = PlanLedgerClient(base_url, **options)
        # the bound method itself: publish() costs what the threaded client's does
        setattr(self, "publish", self._client.publish)

    @property
    def client(self) -> PlanLedgerClient:
        """The threaded client underneath (for code that is not on the loop)."""
        return self._client

    def publish(self, event: Mapping[str, Any]) -> PublishResult:  # noqa: F811 - replaced per instance in __init__
        return self._client.publish(event)

    def continue_plan(self, plan_id: str, next_seq: int) -> None:
        self._client.continue_plan(plan_id, next_seq)

    def stats(self) -> Stats:
        return self._client.stats()

    def install_sigterm_handler(self, timeout: Optional[float] = None) -> Any:
        """As ``PlanLedgerClient.install_sigterm_handler`` (the close runs in the signal handler, before the
        previous handler)."""
        return self._client.install_sigterm_handler(timeout)

    async def _run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(None, functools.partial(fn, *args, **kwargs))

    async def flush(self, timeout: float = 10.0, stored: bool = False) -> bool:
        """As ``PlanLedgerClient.flush``."""
        return await self._run(self._client.flush, timeout, stored)

    async def close(self, timeout: float = 5.0) -> bool:
        """As ``PlanLedgerClient.close``."""
        return await self._run(self._client.close, timeout)

    async def __aenter__(self) -> "AsyncPlanLedgerClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close(self._client._exit_timeout)

    async def events_status(self, event_ids: Sequence[str], wait_ms: int = 0) -> EventStatus:
        return await self._run(self._client.events_status, event_ids, wait_ms)

    async def active_plan(self, session_id: str) -> SessionActivePlan:
        return await self._run(self._client.active_plan, session_id)

    async def history(self, session_id: str, limit: int = 10) -> SessionHistory:
        return await self._run(self._client.history, session_id, limit)

    async def plans(self, session_id: str, status: Optional[str] = None, limit: int = 20, offset: int = 0) -> PlanPage:
        return await self._run(self._client.plans, session_id, status, limit, offset)

    async def plan(self, plan_id: str) -> PlanTimeline:
        return await self._run(self._client.plan, plan_id)

    async def decisions(self, plan_id: str) -> List[Decision]:
        return await self._run(self._client.decisions, plan_id)

    async def resume_point(self, plan_id: str) -> ResumePoint:
        return await self._run(self._client.resume_point, plan_id)

    async def step_output(self, plan_id: str, step: Union[str, int]) -> str:
        return await self._run(self._client.step_output, plan_id, step)

    async def plan_lineage(self, plan_id: str) -> PlanLineage:
        return await self._run(self._client.plan_lineage, plan_id)

    async def fork_plan(
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
        """As ``PlanLedgerClient.fork_plan``."""
        fork = functools.partial(
            self._client.fork_plan,
            plan_id,
            from_layer=from_layer,
            from_checkpoint=from_checkpoint,
            from_failure=from_failure,
            new_plan_id=new_plan_id,
            session_id=session_id,
            edit_steps=edit_steps,
        )
        return await self._run(fork)

    async def replay_plan(
        self,
        plan_id: str,
        *,
        new_plan_id: Optional[str] = None,
        session_id: Optional[str] = None,
        edit_steps: Optional[Iterable[Any]] = None,
    ) -> ForkOutcome:
        """As ``PlanLedgerClient.replay_plan``."""
        return await self._run(
            self._client.replay_plan, plan_id, new_plan_id=new_plan_id, session_id=session_id, edit_steps=edit_steps
        )

    def request_approval(self, plan: Plan, step_id: str, args: Any, **options: Any) -> AsyncPendingApproval:
        """As ``PlanLedgerClient.request_approval`` (synchronous: it publishes, it does not wait)."""
        return AsyncPendingApproval(self, self._client.request_approval(plan, step_id, args, **options))

    async def approval(self, approval_id: str) -> Approval:
        """As ``PlanLedgerClient.approval``."""
        return await self._run(self._client.approval, approval_id)

    async def wait_approval(self, approval_id: str, timeout: Optional[float] = None) -> Approval:
        """As ``PlanLedgerClient.wait_approval``."""
        return await self._run(self._client.wait_approval, approval_id, timeout)

    async def consume_approval(
        self, approval_id: str, args: Any = None, *, args_digest: Optional[str] = None, consumer: Optional[str] = None
    ) -> Approval:
        """As ``PlanLedgerClient.consume_approval``."""
        return await self._run(
            self._client.consume_approval, approval_id, args, args_digest=args_digest, consumer=consumer
        )
