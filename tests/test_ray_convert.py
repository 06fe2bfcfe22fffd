"""Conversion on Ray Data (``engine="ray"``) on a local two-CPU cluster, compared with the process pool."""

import os

import pytest
from convert_sources import DyingOnceImageFolder, make_imagefolder

import recordio
from recordio.converters import convert_imagefolder, engine
from recordio.tools.__main__ import main
from conftest import child_pythonpath

ray = pytest.importorskip("ray")

TESTS = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def cluster():
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    path = os.pathsep.join([child_pythonpath(TESTS), os.environ.get("PYTHONPATH", "")])
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": path, "RAY_USAGE_STATS_ENABLED": "0"}})
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("imagefolder")
    make_imagefolder(root, per_photo=3)          # 15 files
    return root


def rows(files):
    return [(r["file_name"], r["image"], int(r["label"])) for r in recordio.FileReader(files)]


@pytest.mark.slow
def test_ray_equals_the_process_pool(cluster, folder, tmp_path):
    on_ray = convert_imagefolder(folder, tmp_path / "ray.mindrecord", shard_num=4, engine="ray")
    on_pool = convert_imagefolder(folder, tmp_path / "pool.mindrecord", shard_num=4, workers=1)
    assert on_ray.rows == on_pool.rows == 15 and len(on_ray.files) == 4
    assert rows(on_ray.files) == rows(on_pool.files)
    assert [recordio.count_rows(f) for f in on_ray.files] == [15] * 4


def test_bad_source_raises_the_same_error_as_on_the_pool(cluster, folder, tmp_path):
    bad = folder / "people" / "zz_bad.jpg"
    bad.write_bytes(b"\xff\xd8\xff\xe0 cut")
    try:
        with pytest.raises(recordio.FormatError, match="zz_bad.jpg: unreadable source"):
            convert_imagefolder(folder, tmp_path / "x.mindrecord", shard_num=3, engine="ray")
        assert recordio.missing_shards(tmp_path / "x.mindrecord", 3) == [1]   # others complete: resumable
        summary = convert_imagefolder(folder, tmp_path / "x.mindrecord", shard_num=3, engine="ray",
                                      skip_bad=True)
    finally:
        bad.unlink()
    assert summary.skipped == [(str(bad), "ValueError: truncated JPEG: no end-of-image marker after the image data")]
    assert summary.rows == 15


def test_retried_task_leaves_no_duplicates(cluster, folder, tmp_path):
    source = DyingOnceImageFolder(folder, "people/astronaut_001.jpg", tmp_path / "died")
    summary = engine.convert(source, tmp_path / "x.mindrecord", shard_num=3, engine="ray")
    assert os.path.exists(tmp_path / "died")                 # the worker did die once
    names = [r[0] for r in rows(summary.files)]
    assert len(names) == len(set(names)) == 15


@pytest.mark.slow
def test_cli_engine_ray(cluster, folder, tmp_path, capsys):
    out = tmp_path / "x.mindrecord"
    assert main(["convert", "imagefolder", str(folder), str(out), "--engine", "ray", "--shards", "2"]) == 0
    assert capsys.readouterr().out.startswith(f"wrote 15 rows in 2 shard(s) to {out}")
