"""Messages that say what to do (issue 42, section 3): each case a user met, and the fix the message names."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

import recordio
from conftest import GOLDEN_COPIES, TESTS
from recordio.tools import convert
from recordio.tools.__main__ import COMMANDS, SIGPIPE_EXIT, main

FIRST = str(GOLDEN_COPIES / "matrix_s4_index" / "matrix_s4_index.mindrecord0")


def run_blocked(blocked, code):
    """``code`` in a fresh process where importing ``blocked`` fails as in an install without it."""
    prelude = f"import sys\nsys.modules[{blocked!r}] = None\n"
    return subprocess.run([sys.executable, "-c", prelude + code], capture_output=True, text=True, timeout=300,
                          cwd=TESTS)


@pytest.fixture
def sharded(tmp_path):
    name = str(tmp_path / "out" / "train.mindrecord")
    os.makedirs(os.path.dirname(name))
    with recordio.FileWriter(name, 4) as w:
        w.add_schema({"label": {"type": "int32"}, "img": {"type": "bytes"}}, "s")
        w.add_index(["label"])
        w.write_raw_data([{"label": i % 3, "img": bytes([i])} for i in range(12)])
    return name


def test_torch_output_without_torch_names_output_numpy(sharded):
    done = run_blocked("torch", f"import recordio\nds = recordio.MindDataset({sharded + '0'!r}, shuffle=False)\n"
                                f"next(iter(ds.create_dict_iterator()))")
    assert "MissingExtraError" in done.stderr
    assert "output_numpy=True" in done.stderr and 'pip install "mindrecordio[torch]"' in done.stderr
    assert "output='torch'" not in done.stderr
    done = run_blocked("torch", f"import recordio\nds = recordio.MindDataset({sharded + '0'!r}, shuffle=False)\n"
                                f"print(next(iter(ds.create_dict_iterator(output_numpy=True)))['label'])")
    assert done.returncode == 0 and done.stdout.strip() == "0", done.stderr[-2000:]


def test_star_import_of_the_dataset_namespace_loads_no_torch():
    done = subprocess.run([sys.executable, "-c", "from recordio.dataset import *\nimport sys\n"
                           "print('torch' in sys.modules, MindDataset.__name__)\n"
                           "import recordio.dataset as ds\nprint('TorchDataset' in dir(ds))"],
                          capture_output=True, text=True, timeout=120, cwd=TESTS)
    assert done.stdout.split() == ["False", "MindDataset", "True"], done.stderr[-2000:]


def test_bench_without_opencv_names_the_extra():
    done = run_blocked("cv2", "from recordio.tools.__main__ import main\n"
                              "sys.exit(main(['bench', '--suite', 'storage', '--quick']))")
    assert done.returncode == 1
    assert 'recordio bench --suite storage needs OpenCV: pip install "mindrecordio[vision]"' in done.stderr


def test_the_ray_engine_without_ray_says_it_once(tmp_path):
    (tmp_path / "img" / "a").mkdir(parents=True)
    (tmp_path / "img" / "a" / "0.png").write_bytes(b"not read: the engine is refused first")
    done = run_blocked("ray", "from recordio.tools.__main__ import main\n"
                              f"sys.exit(main(['convert', 'imagefolder', {str(tmp_path / 'img')!r}, "
                              f"{str(tmp_path / 'x.mindrecord')!r}, '--engine', 'ray']))")
    assert done.returncode == 1
    assert done.stderr.strip() == """recordio: error: engine='ray' needs Ray Data: pip install "mindrecordio[ray]\""""


@pytest.mark.parametrize("argv", [["info", FIRST, "--json"], ["info", FIRST], ["count", FIRST],
                                  ["head", FIRST, "-n", "3"], ["verify", FIRST], ["query", FIRST, "--where", "label=1"],
                                  ["doctor"], ["--help"], ["count", "--help"], ["--version"]])
def test_a_reader_that_went_away_ends_the_command_quietly(argv):
    """`recordio ... | head -3`: the pipe's reader is gone before the command writes (deterministic)."""
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([sys.executable, "-m", "recordio.tools", *argv], stdout=write, stderr=subprocess.PIPE,
                              text=True, timeout=120, cwd=TESTS)
    finally:
        os.close(write)
    assert done.stderr == ""
    assert done.returncode == (0 if "--help" in argv else SIGPIPE_EXIT)     # argparse drops its help quietly itself


def test_the_writers_name_is_accepted_for_its_shards(sharded, capsys):
    assert main(["count", sharded]) == 0
    assert capsys.readouterr().out.strip() == "12"
    assert main(["info", sharded]) == 0
    assert "rows: 12 in 4 shard(s)" in capsys.readouterr().out
    assert main(["verify", sharded]) == 0
    assert "train.mindrecord0: 4 shard(s), 12 rows" in capsys.readouterr().out
    assert main(["query", sharded, "--where", "label=2", "--csv", "--columns", "label"]) == 0
    assert capsys.readouterr().out.startswith("row,label\n2,2\n5,2\n")
    assert main(["count", sharded + "7"]) == 1                       # not a shard: MindSpore's message
    assert "can not be found" in capsys.readouterr().err


def test_convert_makes_the_output_folder(tmp_path):
    import cv2

    for name in ("cat", "dog"):
        (tmp_path / "img" / name).mkdir(parents=True)
        cv2.imwrite(str(tmp_path / "img" / name / "0.png"), np.full((4, 4, 3), 9, np.uint8))
    out = tmp_path / "new" / "deeper" / "x.mindrecord"
    assert main(["convert", "imagefolder", str(tmp_path / "img"), str(out), "--quiet"]) == 0
    assert recordio.count_rows(str(out) + "0") == 2


def test_a_file_that_is_not_mindrecord_is_called_so(tmp_path, capsys):
    text = tmp_path / "notes.txt"
    text.write_text("import numpy as np\n" * 20)
    assert main(["info", str(text)]) == 1
    err = capsys.readouterr().err
    assert "is not a MindRecord file" in err and "b'import n'" in err
    with pytest.raises(recordio.FormatError, match="is not a MindRecord file"):
        recordio.FileReader(str(text), use_index=False)


def test_verify_names_a_damaged_shard_once_per_problem(sharded, capsys):
    damaged = sharded + "2"
    os.truncate(damaged, 20000)
    assert main(["verify", sharded + "0"]) == 1
    [line] = [ln for ln in capsys.readouterr().out.splitlines() if "PROBLEM" in ln]
    assert line.count(damaged) == 1 and line.startswith(f"  PROBLEM {damaged}: ") and "truncated" in line


def test_the_top_help_and_convert_help_list_the_same_formats(capsys):
    assert main(["--help"]) == 0
    top = capsys.readouterr().out
    assert main(["convert", "--help"]) == 0
    sub = capsys.readouterr().out
    listed = set(re.findall(r"^    (\w+)", sub, re.M))
    assert listed == set(convert.FORMATS)
    line = COMMANDS["convert"]
    assert {f for f in convert.FORMATS if re.search(rf"\b{f}\b", line)} == set(convert.FORMATS)
    assert all(re.search(rf"\b{f}\b", convert.HELP) for f in convert.FORMATS)
    assert "convert imagefolder, cifar10" in " ".join(top.split())
