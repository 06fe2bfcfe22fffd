"""A map of elementwise ops (``TypeCast``) right before ``batch`` is applied to the batch's columns
(map_op.ColumnMap): its batches, dtypes, forms, errors and resume states equal those of the row path
(each row mapped, then stacked), in every order, shard, bytes form and schema type."""

import numpy as np
import pytest

from recordio import config
from recordio.dataset import MindDataset, Shuffle
from recordio.dataset import map_op
from recordio.dataset import mind_dataset as mind_dataset_module
from recordio.dataset.transforms import TypeCast
from test_columns import _all_types
from test_dataset_columns import _outputs, _same

NUMERIC = ["i32", "i64", "f32", "f64", "fixed", "ints", "ints32", "vec"]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("mapcols") / "d.mindrecord")
    _all_types(path, n=103)
    return path + "0"


@pytest.fixture(scope="module")
def equal_bytes(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("mapcols-eq") / "d.mindrecord")
    _all_types(path, n=40, equal_bytes=True, shards=1)
    return path


def _paths(build, monkeypatch, **kw):
    """The batches through the column path, through the bulk rows (no column reader) and through the
    row path (no bulk at all), checked equal; the column path's batch count and how often it ran."""
    calls = []
    real = map_op.ColumnMap.columns

    def counting(self, read_columns):
        read = real(self, read_columns)

        def counted(ids):
            calls.append(len(ids))
            return read(ids)
        return counted

    monkeypatch.setattr(map_op.ColumnMap, "columns", counting)
    fast = _outputs(build, **kw)
    monkeypatch.setattr(map_op.ColumnMap, "columns", real)
    monkeypatch.setattr(mind_dataset_module.MindDataset, "_column_reader", lambda self: None)
    bulk = _outputs(build, **kw)
    monkeypatch.setattr(map_op.MapDataset, "_epoch_rows", lambda self, ctx, epoch: None)
    rows = _outputs(build, **kw)
    monkeypatch.undo()
    assert fast and len(fast) == len(bulk) == len(rows)
    for other in (bulk, rows):
        for (names_f, f, state_f), (names_o, o, state_o) in zip(fast, other):
            assert names_f == names_o
            for name in names_f:
                assert _same(f[name], o[name]), name
            assert state_f == state_o
    return fast, calls


def _cast_all(ds, names, dtype):
    for name in names:
        ds = ds.map(operations=TypeCast(dtype), input_columns=name)
    return ds


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.uint8, np.bool_, np.float64])
def test_every_numeric_type_cast(dataset, monkeypatch, dtype):
    def build():
        return _cast_all(MindDataset(dataset, shuffle=True, columns_list=NUMERIC), NUMERIC, dtype).batch(8)

    fast, calls = _paths(build, monkeypatch)
    assert len(calls) == len(NUMERIC) * len(fast)          # every map on every batch (of both epochs)
    first = fast[0][1]
    assert first["i64"].dtype == dtype and first["i64"].shape == (8,)
    assert first["fixed"].shape == (8, 2, 3) and first["fixed"].dtype == dtype
    assert isinstance(first["ints"], list) or first["ints"].dtype == dtype    # -1 rows stack when equal


@pytest.mark.parametrize("options", [dict(shuffle=False), dict(shuffle=True, num_shards=3, shard_id=2),
                                     dict(shuffle=Shuffle.FILES), dict(shuffle=False, num_shards=2, shard_id=0)],
                         ids=["in-order", "sharded", "files", "sharded-in-order"])
@pytest.mark.parametrize("drop", [False, True])
def test_orders_shards_and_the_last_batch(dataset, monkeypatch, options, drop):
    def build():
        ds = MindDataset(dataset, columns_list=["ints", "f32", "s"], **options)
        ds = ds.map(operations=[TypeCast(np.float32), TypeCast(np.int16)], input_columns="ints")
        return ds.map(operations=TypeCast(np.float64), input_columns="f32").batch(7, drop_remainder=drop)

    _, calls = _paths(build, monkeypatch)
    assert calls


def test_bytes_and_strings_go_value_by_value(dataset, equal_bytes, monkeypatch):
    """bytes (unequal and equal lengths, both bytes forms) are cast as the ops see them, uint8 arrays;
    numeric strings parse as numpy parses them, the same either way."""
    def build(path, column, dtype):
        return lambda: MindDataset(path, shuffle=True, columns_list=[column, "i32"]).map(
            operations=TypeCast(dtype), input_columns=column).batch(6)

    fast, _ = _paths(build(dataset, "b", np.float32), monkeypatch)
    assert isinstance(fast[0][1]["b"], list) and fast[0][1]["b"][0].dtype == np.float32
    fast, _ = _paths(build(equal_bytes, "b", np.int16), monkeypatch)
    assert fast[0][1]["b"].shape == (6, 5) and fast[0][1]["b"].dtype == np.int16
    config.set_bytes_form("mindspore")
    try:
        fast, _ = _paths(build(equal_bytes, "b", np.int16), monkeypatch)
        assert fast[0][1]["b"].shape == (6, 5) and fast[0][1]["b"].dtype == np.int16
    finally:
        config.set_bytes_form("uint8")


def test_an_error_names_the_same_row_on_both_paths(tmp_path, monkeypatch):
    from recordio import FileWriter
    path = str(tmp_path / "s.mindrecord")
    with FileWriter(path) as writer:
        writer.add_schema({"s": {"type": "string"}, "k": {"type": "int32"}}, "strings")
        writer.write_raw_data([{"s": str(i) if i != 13 else "x13", "k": i} for i in range(20)])

    def run():
        ds = MindDataset(path, shuffle=False).map(operations=TypeCast(np.int32), input_columns="s").batch(4)
        return list(ds.create_tuple_iterator(num_epochs=1, output_numpy=True))

    with pytest.raises(ValueError) as fast:
        run()
    monkeypatch.setattr(map_op.MapDataset, "_epoch_rows", lambda self, ctx, epoch: None)
    with pytest.raises(ValueError) as rows:
        run()
    assert type(fast.value) is type(rows.value)
    for exc in (fast.value, rows.value):
        assert exc.recordio_row == 13 and any("row 13" in note for note in exc.__notes__)


@pytest.mark.parametrize("shuffle", [False, True])
def test_an_error_names_the_rows_file_and_its_place_there(tmp_path, shuffle):
    from recordio import FileWriter
    path = str(tmp_path / "two.mindrecord")
    with FileWriter(path, shard_num=2) as writer:                    # 10 rows a file
        writer.add_schema({"s": {"type": "string"}}, "strings")
        writer.write_raw_data([{"s": str(i) if i != 13 else "x13"} for i in range(20)])
    ds = MindDataset(path + "0", shuffle=shuffle).map(operations=TypeCast(np.int32), input_columns="s")
    with pytest.raises(ValueError) as info:
        list(ds.create_tuple_iterator(num_epochs=1, output_numpy=True))
    notes = info.value.__notes__
    assert f"recordio: source row 13 is row 3 of {path}1" in notes, notes
    assert "recordio: map #0 was given column(s) ['s'] of that row" in notes, notes


def test_resume_inside_an_epoch(dataset, monkeypatch):
    def build():
        return _cast_all(MindDataset(dataset, shuffle=True, columns_list=["ints32", "i64"]),
                         ["ints32", "i64"], np.float32).batch(9)

    full, _ = _paths(build, monkeypatch)
    state = full[4][2]
    resumed, calls = _paths(build, monkeypatch, state=state)
    assert calls
    for (_, got, _), (_, want, _) in zip(resumed, full[5:]):
        assert all(_same(got[n], want[n]) for n in want)


def test_what_stays_on_the_row_path(dataset, monkeypatch):
    """Ops that are not elementwise, maps that rename or take several columns, callbacks, processes,
    and maps below another row op never use the column path (and give the same batches)."""
    from recordio.dataset.callback import DSCallback
    builds = [
        lambda: MindDataset(dataset, columns_list=["i32"]).map(lambda x: x + 1, input_columns="i32").batch(5),
        lambda: MindDataset(dataset, columns_list=["i32"]).map(TypeCast(np.int8), input_columns="i32",
                                                               output_columns="j").batch(5),
        lambda: MindDataset(dataset, columns_list=["i32", "i64"]).map(
            lambda a, b: (a, b), input_columns=["i32", "i64"]).map(TypeCast(np.int8), input_columns="i32").batch(5),
        lambda: MindDataset(dataset, columns_list=["i32"]).map(TypeCast(np.int8), input_columns="i32",
                                                               callbacks=[DSCallback()]).batch(5),
        lambda: MindDataset(dataset, columns_list=["i32"]).map(TypeCast(np.int8), input_columns="i32").map(
            lambda x: x, input_columns="i32").batch(5),
    ]
    for build in builds:
        _, calls = _paths(build, monkeypatch, epochs=1)
        assert not calls
