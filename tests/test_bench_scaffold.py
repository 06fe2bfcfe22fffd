"""Every benchmark tool stands on one scaffold (tools/_common.py): the same rows, the same printed
line, the same ``--json FILE``."""

import ast
import json
import pathlib

import pytest

from recordio.tools import _common

TOOLS = pathlib.Path(__file__).resolve().parents[1] / "tools"


def test_a_row_compares_rates_and_times_so_that_more_is_better():
    rate = _common.bench_row("read", 300.0, "rows/s", "flat file", 100.0, target=">= 2x")
    assert rate == {"name": "read", "value": 300.0, "unit": "rows/s", "baseline": "flat file",
                    "baseline_value": 100.0, "ratio": 3.0, "target": ">= 2x"}
    time = _common.bench_row("open", 0.5, "s", "MindSpore", 2.0, lower_is_better=True, note="cold")
    assert time["ratio"] == 4.0 and time["note"] == "cold"
    alone = _common.bench_row("write", 5e6, "M tokens/s", scale=1e6)
    assert alone["value"] == 5.0 and alone["ratio"] is None and alone["baseline_value"] is None
    line = _common.format_row(rate, width=10)
    assert line.split() == ["read", "300", "rows/s", "3.00x", "flat", "file", "(100)", "target", ">=", "2x"]


def test_main_prints_the_rows_and_writes_them(tmp_path, capsys):
    def add_arguments(parser):
        parser.add_argument("--n", type=int, default=2)

    def run(args):
        return [_common.bench_row(f"row {i}", i + 1.0, "x/s", "one", 1.0) for i in range(args.n)]

    out = tmp_path / "rows.json"
    assert _common.bench_main("A bench.\n\nMore.", add_arguments, run, ["--n", "3", "--json", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert [line.split()[:2] for line in printed] == [["row", "0"], ["row", "1"], ["row", "2"]]
    written = json.loads(out.read_text())
    assert [r["ratio"] for r in written["results"]] == [1.0, 2.0, 3.0] and written["python"]

    def refuse(args):
        raise ValueError("no such part")
    with pytest.raises(SystemExit):
        _common.bench_main("A bench.", add_arguments, run, [], check=refuse)
    assert "no such part" in capsys.readouterr().err


@pytest.mark.parametrize("path", sorted(p.name for p in TOOLS.glob("bench_*.py")))
def test_no_bench_builds_its_own_command_line_or_rows(path):
    """A bench's ``main`` is ``bench_main``; no bench builds its own parser or result dicts."""
    tree = ast.parse((TOOLS / path).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "ArgumentParser":
            pytest.fail(f"tools/{path} builds its own ArgumentParser (use _common.bench_main)")
        if isinstance(node, ast.Dict) and {"name", "ratio"} <= {k.value for k in node.keys
                                                                if isinstance(k, ast.Constant)}:
            pytest.fail(f"tools/{path} builds result rows by hand (use _common.bench_row)")
    mains = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main"]
    if mains:
        assert "bench_main" in ast.unparse(mains[0]), f"tools/{path}: main() is not bench_main"
