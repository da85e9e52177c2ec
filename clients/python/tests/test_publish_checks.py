"""publish() encodes and checks every event in the caller's thread, before its seq is taken.

Run: python3 -m unittest discover -s clients/python/tests (no server needed).
"""
import datetime
import decimal
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from _fake_server import free_port  # noqa: E402
from plan_ledger import Plan, PlanLedgerClient, StepInput  # noqa: E402
from plan_ledger._contract import check_event, timestamp_ok  # noqa: E402

PLAN = Plan("plan-checks", "sess-checks")


def valid_event(**overrides):
    e = {
        "specVersion": 1,
        "eventId": "01900000-0000-7000-8000-000000000000",
        "type": "step.completed",
        "planId": "p1",
        "sessionId": "s1",
        "seq": 0,
        "occurredAt": "2024-05-01T12:00:00.000Z",
        "payload": {"stepId": "s1", "inputTokens": 1, "outputTokens": 2},
    }
    e.update(overrides)
    return e


class Encoding(unittest.TestCase):
    """Every bad value beside valid neighbours: the bad one is refused at the call with its path, takes
    no seq, and its neighbours are queued with consecutive seqs."""

    def setUp(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="plan-ledger-py-")
        self.client = PlanLedgerClient(
            f"http://127.0.0.1:{free_port()}", journal_dir=os.path.join(self.dir, "j"), probe_interval=3600
        )

    def tearDown(self) -> None:
        self.client.close(0)

    def test_values_json_cannot_hold_are_refused_with_their_path(self) -> None:
        cyclic: dict = {}
        cyclic["self"] = cyclic
        bad = {
            "lone surrogate": (
                {"name": "report-\udcff.txt"},
                "payload.state.name: contains the lone surrogate U+DCFF at index 7",
            ),
            "datetime": (
                {"when": datetime.datetime(2024, 5, 1)},
                "payload.state.when: Object of type datetime is not JSON serializable",
            ),
            "set": ({"tags": {"a"}}, "payload.state.tags: Object of type set is not JSON serializable"),
            "bytes": ({"blob": b"\x00\x01"}, "payload.state.blob: Object of type bytes is not JSON serializable"),
            "Decimal": (
                {"price": decimal.Decimal("1.10")},
                "payload.state.price: Object of type Decimal is not JSON serializable",
            ),
            "NaN": (
                {"score": float("nan")},
                "payload.state.score: Out of range float values are not JSON compliant: nan",
            ),
            "Infinity": (
                {"nested": [1, {"x": float("inf")}]},
                "payload.state.nested[1].x: Out of range float values are not JSON compliant: inf",
            ),
            "-Infinity": (
                {"x": float("-inf")},
                "payload.state.x: Out of range float values are not JSON compliant: -inf",
            ),
            "non-str key": ({1: "one"}, "payload.state: keys must be str, not int"),
            "surrogate key": ({"k\ud800": 1}, "lone surrogate U+D800"),
            "self-reference": (cyclic, "must not be nested more than 32 levels deep"),
        }
        seqs = []
        for name, (state, expected) in bad.items():
            with self.subTest(name):
                seqs.append(self.client.checkpoint_saved(PLAN, "cp-ok", 0, {"fine": True}).seq)
                r = self.client.checkpoint_saved(PLAN, "cp-bad", 1, state)
                self.assertFalse(r.ok)
                self.assertEqual(r.reason, "invalid")
                self.assertIsNone(r.seq)
                self.assertIn(expected, "; ".join(v.message for v in r.violations))
        seqs.append(self.client.checkpoint_saved(PLAN, "cp-ok", 0, {"fine": True}).seq)
        self.assertEqual(seqs, list(range(len(bad) + 1)))
        s = self.client.stats()
        self.assertEqual((s.unencodable + s.invalid, s.buffered + s.journaled), (len(bad), len(bad) + 1))
        self.assertTrue(self.client._thread.is_alive())

    def test_bad_values_in_typed_fields_and_lone_surrogates_in_text(self) -> None:
        r = self.client.step_completed(PLAN, "s1", input_tokens=decimal.Decimal(3), output_tokens=1)
        self.assertEqual(
            [v.message for v in r.violations], ["payload.inputTokens: Object of type Decimal is not JSON serializable"]
        )
        r = self.client.step_failed(PLAN, "s1", error="bad file \udc80")
        self.assertIn("payload.error: contains the lone surrogate U+DC80", r.violations[0].message)
        r = self.client.step_completed(PLAN, "s1", input_tokens=True, output_tokens=float("nan"))
        self.assertEqual(
            [v.message for v in r.violations],
            [
                "payload.inputTokens must be an integer",
                "payload.outputTokens: Out of range float values are not JSON compliant: nan",
            ],
        )
        r = self.client.publish(
            {
                "type": "step.started",
                "planId": "p",
                "sessionId": "s",
                "payload": {"stepId": "x"},
                "occurredAt": datetime.datetime.now(),
            }
        )
        self.assertEqual(
            [v.message for v in r.violations], ["occurredAt: Object of type datetime is not JSON serializable"]
        )
        self.assertEqual(self.client.stats().unencodable, 4)
        self.assertEqual(self.client.step_started(PLAN, "s1").seq, 0)

    def test_usage_fields_and_a_reported_cost(self) -> None:
        ok = self.client.step_completed(
            PLAN,
            "s1",
            1200,
            300,
            model="gpt-4o",
            provider="openai",
            cache_read_tokens=1024,
            reasoning_tokens=0,
            reported_cost="0.0123",
        )
        self.assertTrue(ok.ok)
        r = self.client.step_failed(PLAN, "s1", error="x", reported_cost=0.01)  # type: ignore[arg-type]
        self.assertEqual([v.message for v in r.violations], ["payload.reportedCost must be a string"])
        r = self.client.step_failed(PLAN, "s1", error="x", reported_cost="1e-3")
        self.assertEqual(
            [v.message for v in r.violations],
            [
                "payload.reportedCost must be a decimal string of at most 12 digits before and 12 after the point, "
                'e.g. "0.0123"'
            ],
        )

    def test_no_value_is_converted(self) -> None:
        r = self.client.publish(
            {"type": "step.started", "planId": "p", "sessionId": "s", "payload": {"stepId": "x"}, "extra": (1, 2)}
        )
        self.assertEqual([v.message for v in r.violations], ["extra is not an allowed field"])
        ok = self.client.checkpoint_saved(PLAN, "cp", 0, {"text": "héllo 😀", "t": (1, 2.5, None)})
        self.assertTrue(ok.ok)
        data = self.client._buffer[-1][1] if self.client._buffer else None
        if data is not None:
            self.assertIn('"text":"héllo 😀"'.encode("utf-8"), data)

    def test_an_event_over_1_mib_is_refused(self) -> None:
        r = self.client.step_completed(
            PLAN, "s1", input_tokens=1, output_tokens=1, result="x" * 199_000, output_content="y" * 199_000
        )
        self.assertTrue(r.ok)
        r = self.client.checkpoint_saved(PLAN, "cp", 0, {f"k{i}": "z" * 1000 for i in range(1100)})
        self.assertFalse(r.ok)
        self.assertRegex(r.violations[0].message, r"^\(root\) is \d+ bytes of JSON, more than the contract's 1048576$")

    def test_a_non_mapping_is_refused(self) -> None:
        r = self.client.publish(["not", "an", "event"])  # type: ignore[arg-type]
        self.assertEqual((r.ok, r.reason), (False, "invalid"))


class Mirror(unittest.TestCase):
    """The contract's rules, as check_event applies them from the generated table, in the contract's
    words (test/contracts/contract-corpus.test.ts holds them to the server's contract)."""

    def messages(self, event):
        return [v.message for v in check_event(event)]

    def test_valid_events_pass(self) -> None:
        self.assertEqual(self.messages(valid_event()), [])
        self.assertEqual(self.messages(valid_event(seq=3.0)), [])  # JSON's 3.0 is the integer 3
        for type_ in ("plan.created",):
            e = valid_event(
                type=type_,
                payload={
                    "query": "q",
                    "steps": [{"stepId": "a", "index": 0, "agentId": "x", "task": "t", "dependsOn": []}],
                },
            )
            self.assertEqual(self.messages(e), [])

    def test_envelope_rules(self) -> None:
        e = valid_event()
        del e["planId"]
        self.assertEqual(self.messages(e), ["planId is required"])
        self.assertEqual(self.messages(valid_event(seq=True)), ["seq must be an integer"])
        self.assertEqual(self.messages(valid_event(seq=-1)), ["seq must be at least 0"])
        self.assertEqual(self.messages(valid_event(seq=2**31)), ["seq must be at most 2147483647"])
        self.assertEqual(
            self.messages(valid_event(specVersion=2)),
            ["specVersion must be 1, the only spec version this parser supports"],
        )
        self.assertEqual(
            self.messages(valid_event(specVersion=True)),
            ["specVersion must be 1, the only spec version this parser supports"],
        )
        self.assertEqual(self.messages(valid_event(eventId="not-a-uuid")), ["eventId must be a UUID"])
        self.assertEqual(
            self.messages(valid_event(planId="bad id!")),
            [
                "planId must be an external id (1-64 letters, digits, '_', '.', ':' or '-', starting with a letter "
                "or digit)"
            ],
        )
        self.assertEqual(
            self.messages(valid_event(planId="p1\n")),
            [
                "planId must be an external id (1-64 letters, digits, '_', '.', ':' or '-', starting with a letter "
                "or digit)"
            ],
        )
        self.assertEqual(
            self.messages(valid_event(type="step.exploded")),
            [
                "type must be one of: plan.created, plan.decision, step.started, step.completed, step.failed, "
                "step.skipped, handoff.recorded, checkpoint.saved, plan.finalized, approval.requested, "
                "approval.decided"
            ],
        )
        self.assertEqual(self.messages(valid_event(payload=[])), ["payload must be an object"])
        self.assertEqual(self.messages(valid_event(extra=None)), ["extra is not an allowed field"])

    def test_timestamps_as_the_schema_and_its_format_take_them(self) -> None:
        for ok in (
            "2024-05-01T12:00:00Z",
            "2024-05-01T12:00:00.123456789+00:00",
            "2024-02-29T00:00:00Z",
            "1000-01-01T00:00:00Z",
        ):
            self.assertTrue(timestamp_ok(ok), ok)
        # a leap second and a year before 1000 are refused, as the contract refuses them
        for bad in (
            "2016-12-31T23:59:60Z",
            "0999-12-31T23:59:59Z",
            "2024-02-30T00:00:00Z",
            "2023-02-29T00:00:00Z",
            "2024-05-01T12:00:00+01:00",
            "2024-05-01 12:00:00Z",
            "2024-05-01T24:00:00Z",
            "2024-05-01T12:60:00Z",
            "2024-05-01T12:00:60Z",
            "2024-13-01T00:00:00Z",
            "2024-05-01T12:00:00Z\n",
            "２０２４-05-01T12:00:00Z",
        ):
            self.assertFalse(timestamp_ok(bad), bad)

    def test_payload_rules(self) -> None:
        decision = lambda **p: valid_event(type="plan.decision", payload=p)  # noqa: E731
        step = {"stepId": "a", "index": 0, "agentId": "x", "task": "t"}
        self.assertEqual(self.messages(decision(decision="edit")), ["payload.steps is required when decision is edit"])
        self.assertEqual(
            self.messages(decision(decision="edit", steps=[])),
            ["payload.steps must contain at least 1 step when decision is edit"],
        )
        self.assertEqual(
            self.messages(decision(decision="approve", steps=[step])),
            ["payload.steps must be absent unless decision is edit"],
        )
        self.assertEqual(self.messages(decision(decision="edit", steps=[step])), [])
        self.assertEqual(
            self.messages(decision(decision="edit", steps=[dict(step, dependsOn=["b", "b"])])),
            ["payload.steps[0].dependsOn must not contain duplicates"],
        )
        self.assertEqual(
            self.messages(decision(decision="edit", steps=[dict(step, index=1.5)])),
            ["payload.steps[0].index must be an integer"],
        )
        self.assertEqual(
            self.messages(decision(decision="edit", steps=[dict(step, agentId="")])),
            ["payload.steps[0].agentId must be 1 to 100 characters long"],
        )
        self.assertEqual(
            self.messages(decision(decision="edit", steps=[dict(step, title="nul\x00")])),
            ["payload.steps[0].title must not contain the NUL character (U+0000): PostgreSQL cannot store it"],
        )
        # the step graph is the server's to check: a cycle passes here
        cycle = [dict(step, stepId="a", dependsOn=["b"]), dict(step, stepId="b", index=1, dependsOn=["a"])]
        self.assertEqual(self.messages(decision(decision="edit", steps=cycle)), [])
        self.assertEqual(
            self.messages(valid_event(payload={"stepId": "s1", "inputTokens": 1})), ["payload.outputTokens is required"]
        )
        # lengths in characters (code points), as the schema counts them
        self.assertEqual(
            self.messages(valid_event(type="step.started", payload={"stepId": "s", "agentId": "😀" * 100})), []
        )
        state = {}
        node = state
        for _ in range(31):
            node["n"] = {}
            node = node["n"]
        self.assertEqual(
            self.messages(
                valid_event(type="checkpoint.saved", payload={"checkpointId": "c", "layer": 0, "state": state})
            ),
            [],
        )
        node["n"] = {}
        self.assertEqual(
            self.messages(
                valid_event(type="checkpoint.saved", payload={"checkpointId": "c", "layer": 0, "state": state})
            ),
            ["payload.state must not be nested more than 32 levels deep"],
        )


class EveryRuleNamed(unittest.TestCase):
    """A refused event is refused for every rule it breaks, the first of each field, as the server
    names them: check_event and publish() alike."""

    NUL = "must not contain the NUL character (U+0000): PostgreSQL cannot store it"
    SIZE = "(root) must be at most 1048576 bytes of UTF-8 JSON"

    def setUp(self) -> None:
        self.client = PlanLedgerClient(f"http://127.0.0.1:{free_port()}", journal_dir=None, probe_interval=3600)

    def tearDown(self) -> None:
        self.client.close(0)

    def test_an_output_of_2_mb_holding_a_nul_is_refused_for_both(self) -> None:
        output = "x" * 2_000_000 + "\x00"
        e = valid_event(payload={"stepId": "s1", "inputTokens": 1, "outputTokens": 2, "outputContent": output})
        expected = [f"payload.outputContent {self.NUL}", self.SIZE]
        self.assertEqual([v.message for v in check_event(e)], expected)
        r = self.client.step_completed(PLAN, "s1", input_tokens=1, output_tokens=2, output_content=output)
        self.assertEqual((r.ok, r.reason, r.seq), (False, "invalid", None))
        self.assertEqual([v.message for v in r.violations], expected)

    def test_a_nul_and_other_fields_broken_are_each_named(self) -> None:
        e = valid_event(payload={"result": "half\x00way", "inputTokens": "1", "outputTokens": 2})
        self.assertEqual(
            sorted(v.message for v in check_event(e)),
            ["payload.inputTokens must be an integer", f"payload.result {self.NUL}", "payload.stepId is required"],
        )
        # a NUL where an id belongs: the NUL (the first rule of the field), as the server says it
        self.assertEqual([v.message for v in check_event(valid_event(planId="p\x00"))], [f"planId {self.NUL}"])

    def test_one_violation_per_field(self) -> None:
        step = {"stepId": "a", "index": 0, "agentId": "x", "task": "t"}
        e = valid_event(type="plan.decision", payload={"decision": "approve", "steps": "x" * 600})
        self.assertEqual([v.message for v in check_event(e)], ["payload.steps must be an array"])
        e = valid_event(type="plan.created", payload={"query": "q", "steps": [dict(step, title="t" * 600 + "\x00")]})
        self.assertEqual([v.message for v in check_event(e)], [f"payload.steps[0].title {self.NUL}"])


class SnakeCase(unittest.TestCase):
    def setUp(self) -> None:
        self.client = PlanLedgerClient(f"http://127.0.0.1:{free_port()}", journal_dir=None, probe_interval=3600)

    def tearDown(self) -> None:
        self.client.close(0)

    def last_payload(self):
        return json.loads(self.client._buffer[-1][1])["payload"]

    def test_snake_case_step_fields_become_camel_case(self) -> None:
        r = self.client.plan_created(
            PLAN,
            query="q",
            requires_approval=True,
            steps=[
                {"step_id": "a", "index": 0, "agent_id": "x", "task": "t", "expected_output": "md", "title": None},
                StepInput("b", 1, "y", "u", depends_on=("a",)),
                {"stepId": "c", "index": 2, "agentId": "z", "task": "v", "depends_on": ["a", "b"]},
            ],
        )
        self.assertTrue(r.ok, r.violations)
        self.assertEqual(
            self.last_payload(),
            {
                "query": "q",
                "requiresApproval": True,
                "steps": [
                    {"stepId": "a", "index": 0, "agentId": "x", "task": "t", "expectedOutput": "md"},
                    {"stepId": "b", "index": 1, "agentId": "y", "task": "u", "dependsOn": ["a"]},
                    {"stepId": "c", "index": 2, "agentId": "z", "task": "v", "dependsOn": ["a", "b"]},
                ],
            },
        )
        r = self.client.plan_decision(
            PLAN, "edit", decided_by="bob", steps=[{"step_id": "a", "index": 0, "agent_id": "x", "task": "t"}]
        )
        self.assertTrue(r.ok, r.violations)
        self.assertEqual(self.last_payload()["steps"], [{"stepId": "a", "index": 0, "agentId": "x", "task": "t"}])

    def test_a_field_in_both_spellings_is_refused(self) -> None:
        r = self.client.plan_created(
            PLAN, query="q", steps=[{"step_id": "a", "stepId": "b", "index": 0, "agentId": "x", "task": "t"}]
        )
        self.assertEqual([v.message for v in r.violations], ["payload.steps[0].step_id is not an allowed field"])


if __name__ == "__main__":
    unittest.main()
