"""Tests of the notebooks' helpers (no CLI needed): python -m unittest notebooks/test_stormglass_nb.py"""
import importlib.util
import math
import os
import subprocess
import sys
import textwrap
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import polars as pl  # noqa: E402

import nbclean  # noqa: E402
import ron  # noqa: E402
import stormglass_nb as sg  # noqa: E402


class Ron(unittest.TestCase):
    def test_values(self):
        cases = [
            ('(a: 1, b: "x\\"y", c: [1, 2.5, -3], d: None, e: Some(4), f: true)',
             {"a": 1, "b": 'x"y', "c": [1, 2.5, -3], "d": None, "e": 4, "f": True}),
            ("Exponential(mean: \"10ms\")", {"mean": "10ms", "_type": "Exponential"}),
            ("Range(0, 5)", {"_type": "Range", "_values": [0, 5]}),
            ("(1, 2)", [1, 2]),
            ("[QueueFull, COUNT_BASED]", ["QueueFull", "COUNT_BASED"]),
            ("{\"k\": 1}", {"k": 1}),
            ("// c\n( /* d */ a: 1_000, )", {"a": 1000}),
            ("Float(1.0)", {"_type": "Float", "_values": [1.0]}),
            # A raw identifier is a name, not a keyword: the retry jitter's `r#None` variant.
            ("(jitter: r#None, r#type: 1, d: None)", {"jitter": "None", "type": 1, "d": None}),
        ]
        for text, want in cases:
            with self.subTest(text=text):
                self.assertEqual(ron.loads(text), want)

    def test_plain_unwraps_newtypes(self):
        self.assertEqual(ron.plain(ron.loads("Float(0.5)")), 0.5)
        self.assertEqual(ron.plain(ron.loads("Range(0, 5)")), {"_type": "Range", "_values": [0, 5]})

    def test_errors_name_the_position(self):
        with self.assertRaisesRegex(ron.RonError, r"f.ron:2:5: unexpected `\?`"):
            ron.loads("(a: 1,\n b: ?)", "f.ron")
        with self.assertRaisesRegex(ron.RonError, "unterminated string"):
            ron.loads('(a: "x)')

    def test_replace_fields_keeps_comments_and_adds_missing(self):
        text = '// top\nExperiment(\n    name: "x", // the name\n    seeds: Range(0, 5),\n    scenario: Inline(Scenario(duration: "9s")),\n    duration: "10m"\n)\n'
        out = ron.replace_fields(text, {"seeds": "Range(0, 2)", "duration": '"1m"', "warmup": '"5s"'})
        self.assertIn("// the name", out)
        self.assertIn('Scenario(duration: "9s")', out)  # only the top level changes
        self.assertEqual(ron.loads(out)["seeds"], {"_type": "Range", "_values": [0, 2]})
        self.assertEqual(ron.loads(out)["duration"], "1m")
        self.assertEqual(ron.loads(out)["warmup"], "5s")
        self.assertIn('duration: "1m",\n    warmup: "5s",', out)  # a comma was added before the new field


class Stats(unittest.TestCase):
    def test_t975(self):
        # Reference values of the Student t quantile (R: qt(0.975, df)).
        for df, want in [(1, 12.706205), (4, 2.776445), (30, 2.042272), (31, 2.039513), (40, 2.021075),
                         (100, 1.983972), (1000, 1.962339)]:
            self.assertAlmostEqual(sg.t975(df), want, places=4, msg=df)
        self.assertTrue(math.isnan(sg.t975(0)))

    def test_mean_ci(self):
        df = pl.DataFrame({"g": ["a", "a", "a", "b"], "v": [1.0, 2.0, 3.0, 5.0]})
        out = sg.mean_ci(df, ["g"], "v")
        a = out.filter(pl.col("g") == "a").row(0, named=True)
        # sd = 1, n = 3: half-width = t(0.975, 2) / sqrt(3)
        self.assertAlmostEqual(a["mean"], 2.0)
        self.assertAlmostEqual(a["ci95"], 4.302653 / math.sqrt(3), places=6)
        b = out.filter(pl.col("g") == "b").row(0, named=True)
        self.assertEqual(b["n"], 1)
        self.assertIsNone(b["ci95"])  # one seed: no interval

    def test_pareto_front(self):
        df = pl.DataFrame({"x": [1.0, 2.0, 3.0, 2.5, 4.0], "y": [9.0, 5.0, 1.0, 6.0, 1.0]})
        front = sg.pareto_front(df, "x", "y")
        self.assertEqual(list(zip(front["x"], front["y"])), [(1.0, 9.0), (2.0, 5.0), (3.0, 1.0)])

    def test_fmt_ci(self):
        self.assertEqual(sg.fmt_ci(2168.3, 1200.0), "2168 ± 1200")
        self.assertEqual(sg.fmt_ci(45.031, 0.143), "45.03 ± 0.14")
        self.assertEqual(sg.fmt_ci(float("nan"), 1.0), "—")
        self.assertEqual(sg.fmt_ci(1.5, None), "1.5")

    def test_duration_ms(self):
        for text, ms in [("250us", 0.25), ("1.5s", 1500), ("5m", 300000), ("22222222ns", 22.222222), ("2d", 1.728e8)]:
            self.assertAlmostEqual(sg.duration_ms(text), ms)
        with self.assertRaises(ValueError):
            sg.duration_ms("10")


class Clean(unittest.TestCase):
    def test_strip_removes_outputs_and_is_idempotent(self):
        nb = {"cells": [{"cell_type": "code", "execution_count": 3, "metadata": {"execution": {}, "tags": ["x"]},
                         "outputs": [{"output_type": "stream", "name": "stdout", "text": "hi"}], "source": "a\nb"},
                        {"cell_type": "markdown", "metadata": {}, "source": ["# t"]}],
              "metadata": {"kernelspec": {"name": "python3"}, "widgets": {}}, "nbformat": 4, "nbformat_minor": 4}
        once = nbclean.dump(nbclean.clean(nb))
        again = nbclean.dump(nbclean.clean(__import__("json").loads(once)))
        self.assertEqual(once, again)
        cleaned = __import__("json").loads(once)
        self.assertEqual(cleaned["cells"][0]["outputs"], [])
        self.assertIsNone(cleaned["cells"][0]["execution_count"])
        self.assertEqual(cleaned["cells"][0]["metadata"], {"tags": ["x"]})
        self.assertEqual(cleaned["cells"][0]["source"], ["a\n", "b"])
        self.assertEqual(cleaned["metadata"], {"kernelspec": {"name": "python3"}})


if __name__ == "__main__":
    unittest.main()


HERE = Path(__file__).resolve().parent

# Run in a fresh interpreter: a meta-path finder that refuses every `matplotlib` module
# (as if it were not installed), then the helper imported from this folder.
BLOCK_MATPLOTLIB = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "matplotlib":
            raise ImportError("matplotlib is not installed (blocked by the test)")
        return None
sys.meta_path.insert(0, Block())
"""


def python(code: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "MATPLOTLIBRC"}
    return subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(HERE)!r})\n{code}"],
                          capture_output=True, text=True, env=env, cwd=HERE.parent, timeout=120)


class Load(unittest.TestCase):
    def test_imports_without_matplotlib(self):
        out = python(BLOCK_MATPLOTLIB + textwrap.dedent("""
            import stormglass_nb as sg, polars as pl
            assert "matplotlib" not in sys.modules, "imported at load"
            df = pl.DataFrame({"k": [1, 1, 2, 2], "value": [1.0, 3.0, 5.0, 7.0]})
            print(sg.mean_ci(df, ["k"])["mean"].to_list())
        """))
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.strip(), "[2.0, 6.0]")

    def test_the_blocker_blocks(self):
        # Without this, the test above could pass with matplotlib imported after all.
        out = python(BLOCK_MATPLOTLIB + "import matplotlib")
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("blocked by the test", out.stderr)

    @unittest.skipUnless(importlib.util.find_spec("matplotlib"), "matplotlib not installed")
    def test_style_reaches_matplotlib_imported_after_or_before(self):
        check = 'import matplotlib as mpl; c = mpl.rcParams["axes.prop_cycle"].by_key()["color"]; ' \
                'print(mpl.rcParams["figure.dpi"], c[1], mpl.rcParams["axes.spines.top"])'
        for first, then in [("import stormglass_nb", "import matplotlib"),
                            ("import matplotlib", "import stormglass_nb")]:
            with self.subTest(first=first):
                out = python(f"{first}\n{then}\n{check}")
                self.assertEqual(out.returncode, 0, out.stderr)
                self.assertEqual(out.stdout.split(), ["90.0", "#d62728", "False"])
