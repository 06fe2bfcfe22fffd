"""The command line: output, --json, exit codes, help examples, and that every command is documented."""

import json
import os
import pathlib
import subprocess
import sys
import time

import pytest

import recordio

from recordio.tools.__main__ import COMMANDS, main
from recordio.tools.bench import DEFAULT_SUITES
from conftest import GOLDEN_COPIES, ROOT

FIRST = str(GOLDEN_COPIES / "matrix_s4_index" / "matrix_s4_index.mindrecord0")


def test_info_text_and_json(capsys):
    assert main(["info", FIRST]) == 0
    out = capsys.readouterr().out
    assert "rows: 24 in 4 shard(s)" in out and "label: int32 (indexed)" in out and "vec: float32[-1]" in out
    assert main(["info", FIRST, "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["rows"] == 24 and [s["rows"] for s in info["shards"]] == [6, 6, 6, 6]
    assert all(s["allocated_bytes"] < s["apparent_bytes"] for s in info["shards"])   # sparse files


def test_count_and_where(capsys):
    assert main(["count", FIRST]) == 0
    assert capsys.readouterr().out.strip() == "24"
    assert main(["count", FIRST, "--where", "label=3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"rows": 5}
    assert main(["count", FIRST, "--where", "name=x"]) == 1
    assert "not an indexed field" in capsys.readouterr().err


def test_head(capsys):
    assert main(["head", FIRST, "-n", "2", "--columns", "id,img,vec"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and lines[0].startswith("[0] ") and "bytes sha256:" in lines[0]
    assert main(["head", FIRST, "-n", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["id"] == 0


@pytest.mark.parametrize("argv,code,words", [
    (["info", "/nonexistent/x.mr"], 1, "recordio: error:"),
    (["count", str(GOLDEN_COPIES / "manifest.json")], 1, "recordio: error:"),
    (["info", FIRST, "--bogus"], 2, "unrecognized arguments"),
    (["nope"], 2, "invalid choice"),
    (["head", FIRST, "-n", "-1"], 1, "-n must be >= 0"),
])
def test_errors_and_exit_codes(capsys, argv, code, words):
    assert main(argv) == code
    assert words in capsys.readouterr().err


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_has_help_with_example_and_readme_entry(capsys, command):
    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert "example:" in out and f"recordio {command}" in out
    readme = (ROOT / "README.md").read_text()
    assert f"recordio {command}" in readme, f"`recordio {command}` is not documented in README.md"


def test_console_script_count_is_fast():
    script = pathlib.Path(sys.executable).with_name("recordio")
    if not script.exists():
        pytest.skip("the package is not installed (no console script)")
    best = min(_timed([str(script), "count", FIRST]) for _ in range(3))
    assert best < 0.5      # generous for loaded CI machines; `recordio bench` measures the real figure


def _timed(argv):
    start = time.perf_counter()
    out = subprocess.run(argv, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "24"
    return time.perf_counter() - start


@pytest.mark.slow
def test_bench_quick_runs_every_suite_from_a_plain_clone(tmp_path):
    """`recordio bench --quick` needs nothing beside the clone (its workloads live in tools/)."""
    env = {k: v for k, v in os.environ.items() if k != "RECORDIO_MINDSPORE_PYTHON"}
    done = subprocess.run([sys.executable, "-m", "recordio.tools", "bench", "--quick", "--workdir", str(tmp_path),
                           "--json", str(tmp_path / "bench.json")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    suites = {row["suite"] for row in json.loads((tmp_path / "bench.json").read_text())["results"]}
    assert suites == set(DEFAULT_SUITES) == {"storage", "pipeline", "vision", "sink", "convert", "mindpage", "tokens", "cold",
                                                  "models"}


def _query_dataset(tmp_path):
    path = str(tmp_path / "q.mindrecord")
    with recordio.FileWriter(path, 2) as writer:
        writer.add_schema({"name": {"type": "string"}, "label": {"type": "int32"}, "img": {"type": "bytes"}}, "q")
        writer.write_raw_data([{"name": f"n{i}", "label": i % 3, "img": bytes([i])} for i in range(9)])
    return path + "1"


def test_query_lists_matching_rows_in_every_form(tmp_path, capsys):
    path = _query_dataset(tmp_path)
    assert main(["query", path, "--where", "label=1"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["row"], r["name"], r["label"]) for r in rows] == [(1, "n1", 1), (4, "n4", 1), (7, "n7", 1)]
    assert main(["query", path, "--where", "label=2", "--where", "name=n5", "--csv", "--columns", "name"]) == 0
    assert capsys.readouterr().out == "row,name\n5,n5\n"
    assert main(["query", path, "--where", "label=0", "--table", "--limit", "2"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["row", "label", "name", "img"] and len(table) == 4
    assert main(["query", path, "--where", "img=1"]) == 1
    assert "not an indexed field" in capsys.readouterr().err
    assert main(["query", path, "--where", "label=x"]) == 1
    assert "expected a int32 value" in capsys.readouterr().err
