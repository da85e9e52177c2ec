"""fork_plan, replay_plan and plan_lineage against a stand-in server: what they send, with which key,
what they answer, and what they refuse before sending anything.

Run: python3 -m unittest discover -s clients/python/tests (npm test runs them too).
"""
import asyncio
import decimal
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from _fake_server import FakeServer  # noqa: E402
from plan_ledger import (  # noqa: E402
    AsyncPlanLedgerClient,
    Conflict,
    ForkOutcome,
    NotFound,
    PlanLedgerClient,
    PlanLedgerError,
    PlanLineage,
    StepInput,
)

READ_KEY = "read-key-0123456789abcdef"
ADMIN_KEY = "admin-key-0123456789abcdef"

OUTCOME = {
    "planId": "p1.fork-0a1b2c3d",
    "sessionId": "s1",
    "kind": "fork",
    "parentPlanId": "p1",
    "layer": 1,
    "checkpointId": None,
    "steps": 5,
    "inheritedSteps": 1,
    "changedSteps": ["d"],
    "addedSteps": ["e"],
    "nextLayer": 1,
    "nextSteps": ["b", "c"],
    "nextSeq": 1,
}


def node(plan_id, parent=None, children=(), current=False, kind=None, layer=None):
    return {
        "planId": plan_id,
        "sessionId": "s1",
        "parentPlanId": parent,
        "kind": kind,
        "forkLayer": layer,
        "forkCheckpoint": None,
        "status": "completed",
        "createdAt": "2030-01-01T00:00:00.000Z",
        "completedAt": None,
        "retiredAt": None,
        "totalSteps": 2,
        "completedSteps": 2,
        "failedSteps": 0,
        "inputTokens": 10,
        "outputTokens": 2,
        "cost": "0.0125",
        "current": current,
        "children": list(children),
    }


LINEAGE = {
    "planId": "p1-f1-f1",
    "rootId": "p1",
    "plans": 4,
    "truncated": False,
    "root": node(
        "p1",
        children=[
            node(
                "p1-f1",
                "p1",
                kind="fork",
                layer=1,
                children=[node("p1-f1-f1", "p1-f1", kind="fork", layer=1, current=True)],
            ),
            node("p1-r", "p1", kind="replay", layer=0),
        ],
    ),
}


class ForkAndLineage(unittest.TestCase):
    def setUp(self) -> None:
        self.server = FakeServer().start()
        self.client = PlanLedgerClient(self.server.url, read_key=READ_KEY, admin_key=ADMIN_KEY, journal_dir=None)

    def tearDown(self) -> None:
        self.client.close(0)
        self.server.stop()

    def test_fork_plan_posts_one_start_and_the_edits_with_the_admin_key_and_answers_typed(self) -> None:
        self.server.post_routes["/v1/plans/p1/fork"] = (201, OUTCOME)
        out = self.client.fork_plan(
            "p1",
            from_layer=1,
            edit_steps=[
                {"step_id": "d", "index": 3, "agent_id": "x", "task": "fixed", "depends_on": ("b", "c")},
                StepInput("e", 0, "x", "added", depends_on=["d"]),
            ],
        )
        self.assertIsInstance(out, ForkOutcome)
        self.assertEqual(
            (out.plan_id, out.layer, out.next_steps, out.next_seq, out.checkpoint_id),
            ("p1.fork-0a1b2c3d", 1, ["b", "c"], 1, None),
        )
        self.assertEqual((out.changed_steps, out.added_steps, out["inheritedSteps"]), (["d"], ["e"], 1))
        self.assertEqual(dict(out), OUTCOME)
        self.assertEqual(
            self.server.requests,
            [
                (
                    "POST",
                    "/v1/plans/p1/fork",
                    f"Bearer {ADMIN_KEY}",
                    {
                        "fromLayer": 1,
                        "editSteps": [
                            {"stepId": "d", "index": 3, "agentId": "x", "task": "fixed", "dependsOn": ["b", "c"]},
                            {"stepId": "e", "index": 0, "agentId": "x", "task": "added", "dependsOn": ["d"]},
                        ],
                    },
                )
            ],
        )

    def test_each_start_and_the_new_plan_id_and_session(self) -> None:
        self.server.post_routes["/v1/plans/p%2F1/"] = (201, OUTCOME)
        self.client.fork_plan("p/1", from_checkpoint="cp1", new_plan_id="p2", session_id="s2")
        self.client.fork_plan("p/1", from_failure=True)
        self.client.fork_plan("p/1", from_layer=0)
        self.client.replay_plan("p/1", new_plan_id="p3")
        self.client.replay_plan("p/1")
        self.assertEqual(
            [(r[1], r[3]) for r in self.server.requests],
            [
                ("/v1/plans/p%2F1/fork", {"fromCheckpoint": "cp1", "planId": "p2", "sessionId": "s2"}),
                ("/v1/plans/p%2F1/fork", {"fromFailure": True}),
                ("/v1/plans/p%2F1/fork", {"fromLayer": 0}),
                ("/v1/plans/p%2F1/replay", {"planId": "p3"}),
                ("/v1/plans/p%2F1/replay", {}),
            ],
        )

    def test_refuses_anything_but_exactly_one_start_before_sending(self) -> None:
        self.server.post_routes["/v1/plans/p1/fork"] = (201, OUTCOME)
        for starts in (
            {},
            {"from_layer": 1, "from_failure": True},
            {"from_layer": 0, "from_checkpoint": "cp"},
            {"from_failure": False},
        ):
            with self.assertRaisesRegex(
                ValueError, "^fork_plan: give exactly one of from_layer=N, from_checkpoint=ID, from_failure=True"
            ):
                self.client.fork_plan("p1", **starts)
        self.assertEqual(self.server.requests, [])

    def test_errors_keep_the_servers_line_404_not_found_409_conflict(self) -> None:
        self.server.post_routes["/v1/plans/gone/"] = (404, {"error": 'plan "gone" not found'})
        self.server.post_routes["/v1/plans/p1/fork"] = (
            409,
            {"error": 'plan "p2" already exists: choose another planId'},
        )
        self.server.post_routes["/v1/plans/p1/replay"] = (403, {"error": "this API key lacks the admin scope"})
        with self.assertRaises(NotFound) as nf:
            self.client.fork_plan("gone", from_layer=0)
        self.assertEqual((nf.exception.status, nf.exception.message), (404, 'plan "gone" not found'))
        with self.assertRaises(Conflict) as conflict:
            self.client.fork_plan("p1", from_layer=0, new_plan_id="p2")
        self.assertIsInstance(conflict.exception, PlanLedgerError)
        self.assertEqual(str(conflict.exception), '409: plan "p2" already exists: choose another planId')
        with self.assertRaises(PlanLedgerError) as refused:
            self.client.replay_plan("p1")
        self.assertEqual(refused.exception.status, 403)
        self.assertNotIsInstance(refused.exception, (NotFound, Conflict))

    def test_plan_lineage_is_typed_all_the_way_down(self) -> None:
        self.server.routes["/v1/plans/p1-f1-f1/lineage"] = (200, LINEAGE)
        lineage = self.client.plan_lineage("p1-f1-f1")
        self.assertIsInstance(lineage, PlanLineage)
        self.assertEqual((lineage.root_id, lineage.plans, lineage.truncated), ("p1", 4, False))
        self.assertEqual([n.plan_id for n in lineage.root.walk()], ["p1", "p1-f1", "p1-f1-f1", "p1-r"])
        deep = lineage.root.children[0].children[0]
        self.assertEqual(
            (deep.plan_id, deep.parent_plan_id, deep.kind, deep.fork_layer, deep.current),
            ("p1-f1-f1", "p1-f1", "fork", 1, True),
        )
        self.assertEqual(lineage.find("p1-r").kind, "replay")
        self.assertIsNone(lineage.find("nope"))
        self.assertEqual(deep.cost, decimal.Decimal("0.0125"))
        self.assertEqual(lineage["root"]["children"][1]["planId"], "p1-r")
        self.assertEqual(self.server.requests, [("GET", "/v1/plans/p1-f1-f1/lineage", f"Bearer {READ_KEY}", None)])

    def test_fork_and_replay_need_an_admin_key_before_sending(self) -> None:
        self.server.post_routes["/v1/plans/p1/"] = (201, OUTCOME)
        c = PlanLedgerClient(self.server.url, read_key=READ_KEY, journal_dir=None)
        try:
            with self.assertRaisesRegex(
                ValueError, r"^fork_plan needs an admin key: create the client with admin_key="
            ):
                c.fork_plan("p1", from_layer=0)
            with self.assertRaisesRegex(ValueError, r"^replay_plan needs an admin key"):
                c.replay_plan("p1")
        finally:
            c.close(0)
        self.assertEqual(self.server.requests, [])

    def test_an_admin_key_alone_reads_too(self) -> None:
        self.server.routes["/v1/plans/p1/lineage"] = (200, LINEAGE)
        c = PlanLedgerClient(self.server.url, admin_key=ADMIN_KEY, journal_dir=None)
        try:
            c.plan_lineage("p1")
        finally:
            c.close(0)
        self.assertEqual(self.server.requests[0][2], f"Bearer {ADMIN_KEY}")

    def test_the_asyncio_client_forks_replays_and_reads_the_lineage(self) -> None:
        self.server.post_routes["/v1/plans/p1/"] = (201, OUTCOME)
        self.server.routes["/v1/plans/p1/lineage"] = (200, LINEAGE)

        async def run():
            async with AsyncPlanLedgerClient(
                self.server.url, read_key=READ_KEY, admin_key=ADMIN_KEY, journal_dir=None
            ) as ledger:
                fork = await ledger.fork_plan("p1", from_checkpoint="cp1", edit_steps=[StepInput("d", 3, "x", "t")])
                replay = await ledger.replay_plan("p1", session_id="s9")
                lineage = await ledger.plan_lineage("p1")
                with self.assertRaises(ValueError):
                    await ledger.fork_plan("p1")
                return fork, replay, lineage

        fork, replay, lineage = asyncio.run(run())
        self.assertEqual(
            (fork.plan_id, replay.next_seq, lineage.root.children[0].plan_id), ("p1.fork-0a1b2c3d", 1, "p1-f1")
        )
        self.assertEqual(
            [(r[0], r[1], r[3]) for r in self.server.requests],
            [
                (
                    "POST",
                    "/v1/plans/p1/fork",
                    {"fromCheckpoint": "cp1", "editSteps": [{"stepId": "d", "index": 3, "agentId": "x", "task": "t"}]},
                ),
                ("POST", "/v1/plans/p1/replay", {"sessionId": "s9"}),
                ("GET", "/v1/plans/p1/lineage", None),
            ],
        )


if __name__ == "__main__":
    unittest.main()
