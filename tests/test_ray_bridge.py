"""recordio.ray on a local two-CPU Ray cluster: read by row runs, write through a Datasink, round trips."""

import os

import numpy as np
import pytest
from bridge_data import SCHEMA, make_rows, read, same, write_dataset

import recordio

ray = pytest.importorskip("ray")
from recordio.ray import MindRecordDatasource, read_mindrecord, write_mindrecord  # noqa: E402
from recordio.ray.read import plan_reads  # noqa: E402

TESTS = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def cluster():
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": TESTS, "RAY_USAGE_STATS_ENABLED": "0"}})
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return write_dataset(tmp_path_factory.mktemp("ray") / "all.mindrecord", n=40, shard_num=4)


def batch_rows(ds):
    """The rows of ``ds`` from its numpy batches (which keep the dtypes; Arrow rows give Python floats)."""
    rows = []
    for batch in ds.iter_batches(batch_size=16, batch_format="numpy"):
        rows += [{k: (v[i].item() if k == "f64" else v[i]) for k, v in batch.items()}
                 for i in range(len(next(iter(batch.values()))))]
    return rows


def test_plan_reads_cuts_contiguous_runs_of_even_size():
    assert plan_reads([5, 0, 3, 4], 5) == [[(0, 0, 3)], [(0, 3, 5), (2, 0, 1)], [(2, 1, 3)], [(3, 0, 2)], [(3, 2, 4)]]
    assert plan_reads([2, 2], 1) == [[(0, 0, 2), (1, 0, 2)]]
    assert plan_reads([3], 10) == [[(0, 0, 1)], [(0, 1, 2)], [(0, 2, 3)]]
    assert plan_reads([0, 0], 3) == []


def test_more_read_tasks_than_shards_when_asked(dataset):
    source = MindRecordDatasource(dataset)
    tasks = source.get_read_tasks(10)
    assert len(source.files) == 4 and len(tasks) == 10
    assert sum(t.metadata.num_rows for t in tasks) == 40
    rows = [r for t in tasks for block in t() for r in block.to_pylist()]
    assert [r["text"] for r in rows] == [r["text"] for r in read(dataset)]


@pytest.mark.slow
def test_read_equals_the_file_reader(cluster, dataset):
    ds = read_mindrecord(dataset, override_num_blocks=10)
    assert ds.count() == 40
    assert ds.materialize().num_blocks() == 10
    same(batch_rows(ds), read(dataset))


def test_rows_keep_their_order_when_tasks_finish_out_of_order(cluster, dataset):
    # Ray hands blocks on as read tasks finish unless preserve_order is on; under load (both CPUs busy)
    # that once gave row 20 where row 16 belongs. The dataset, and those made from it, keep the order.
    ds = read_mindrecord(dataset, override_num_blocks=10)
    assert ds.context.execution_options.preserve_order
    assert ds.map_batches(lambda b: b).context.execution_options.preserve_order
    assert not ray.data.DataContext.get_current().execution_options.preserve_order   # the user's own: untouched


def test_columns_are_read_alone(cluster, dataset):
    ds = read_mindrecord(dataset, columns=["ids", "i32"])
    assert ds.materialize().num_blocks() == 4              # default: 2 per CPU, at least one per shard
    batch = ds.take_batch(40, batch_format="numpy")
    assert list(batch) == ["ids", "i32"]
    assert batch["i32"].tolist() == [int(r["i32"]) for r in read(dataset)]


@pytest.mark.slow
def test_round_trip_through_ray(cluster, dataset, tmp_path):
    out = tmp_path / "back.mindrecord"
    write_mindrecord(read_mindrecord(dataset, override_num_blocks=7), out, SCHEMA, shard_num=3,
                     index_fields=["i64"])
    assert sorted(recordio.FileReader(str(out) + "0").file_row_counts) == [13, 13, 14]
    same(read(str(out) + "0"), read(dataset))
    assert recordio.FileReader(str(out) + "0").index_fields == ["i64"]
    assert recordio.verify(str(out) + "0").ok


@pytest.mark.slow
def test_more_shards_than_rows_gives_empty_shards(cluster, tmp_path):
    schema = {"n": {"type": "int64"}}
    write_mindrecord(ray.data.range(3).rename_columns({"id": "n"}), tmp_path / "r.mindrecord", schema,
                     shard_num=5)
    assert [int(r["n"]) for r in read(str(tmp_path / "r.mindrecord0"))] == [0, 1, 2]


def test_a_failed_task_leaves_no_dataset(cluster, dataset, tmp_path):
    rows = make_rows(12)
    rows[9]["i32"] = 2**40                                 # out of int32's range: shard 2's task fails
    ds = ray.data.from_items(rows)
    out = tmp_path / "failed.mindrecord"
    with pytest.raises(Exception, match="i32"):
        write_mindrecord(ds, out, SCHEMA, shard_num=3)
    assert sorted(os.listdir(tmp_path)) == []


@pytest.mark.slow
def test_a_failed_overwrite_keeps_the_old_dataset(cluster, dataset, tmp_path):
    out = tmp_path / "keep.mindrecord"
    write_mindrecord(ray.data.from_items(make_rows(4)), out, SCHEMA)
    before = read(str(out))
    bad = make_rows(4)
    for row in bad:
        row["matrix"] = row["matrix"].astype(np.float64)       # no silent cast to the schema's float32
    with pytest.raises(Exception, match="matrix"):
        write_mindrecord(ray.data.from_items(bad), out, SCHEMA, overwrite=True)
    same(read(str(out)), before)
    with pytest.raises(Exception, match="already exist"):
        write_mindrecord(ray.data.from_items(make_rows(4)), out, SCHEMA)
