import json
import os
import unittest

from plan_ledger.digest import args_digest, canonical_json

VECTORS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "test", "fixtures", "args-digest", "vectors.json")


class CanonicalJsonTest(unittest.TestCase):
    def test_every_shared_vector(self) -> None:
        with open(VECTORS, encoding="utf-8") as f:
            vectors = json.load(f)
        self.assertGreater(len(vectors), 20)
        for v in vectors:
            with self.subTest(canonical=v["canonical"]):
                self.assertEqual(canonical_json(v["input"]), v["canonical"])
                self.assertEqual(args_digest(v["input"]), v["sha256"])

    def test_key_order_does_not_change_the_digest(self) -> None:
        self.assertEqual(args_digest({"a": 1, "b": [1, 2]}), args_digest({"b": [1, 2], "a": 1}))

    def test_refuses_what_json_cannot_say(self) -> None:
        for bad in (float("nan"), float("inf"), {1: "x"}, object()):
            with self.subTest(value=repr(bad)):
                with self.assertRaises(TypeError):
                    canonical_json(bad)


if __name__ == "__main__":
    unittest.main()
