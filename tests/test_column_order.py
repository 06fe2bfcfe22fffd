"""Column positions follow ``get_col_names()`` everywhere (MindSpore's order).

MindDataset's columns are ``columns_list`` as given, else the field names sorted; every operation
keeps its outputs' positions in step with ``get_col_names()``: dicts (key order) and tuples, through
``map``/``project``/``rename``/``zip``/``concat``/``batch``/padding, ``TorchDataset``, ``DataSink``
and ``train()``. The ``mindspore`` tier builds the same pipelines in MindSpore 2.10 and compares
the tuples position by position (names, dtypes, shapes and values).
"""

import numpy as np
import pytest

import recordio as rio
import recordio.dataset as rds
from ms_client import run_oracle
from ms_oracle import build_pipeline, from_plain

SCHEMA = {"label": {"type": "int32"}, "image": {"type": "bytes"}, "id": {"type": "int64"},
          "score": {"type": "float32"}, "name": {"type": "string"},
          "vec": {"type": "int32", "shape": [3]}}
SORTED = ["id", "image", "label", "name", "score", "vec"]       # raw-then-blob would put image last
ROWS = 12


def _rows(offset):
    return [{"label": np.int32(i % 3), "image": bytes([i + 1]) * (i % 4 + 1), "id": np.int64(offset + i),
             "score": np.float32(i / 4), "name": f"row{offset + i}",
             "vec": np.arange(3, dtype=np.int32) + i} for i in range(ROWS)]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("order")
    out = {}
    for name, offset in (("a", 0), ("b", 100)):
        path = str(folder / f"{name}.mindrecord")
        with rio.FileWriter(path) as w:
            w.add_schema(SCHEMA, "order")
            w.write_raw_data(_rows(offset))
        out[name] = path
    return out


def pipelines(files):
    """name -> pipeline spec (``ms_oracle.build_pipeline``), each run by MindSpore and by recordio."""
    a = {"dataset_files": files["a"], "shuffle": False}
    b = {"dataset_files": files["b"], "shuffle": False}
    scalars = dict(a, columns_list=["label", "id"])
    return {
        "all_columns": {"source": a, "steps": []},
        "columns_list": {"source": dict(a, columns_list=["image", "label"]), "steps": []},
        "columns_list_3": {"source": dict(a, columns_list=["vec", "label", "id"]), "steps": []},
        "map_one_to_two": {"source": a, "steps": [
            ["map", {"fn": "dup", "input_columns": ["label"], "output_columns": ["l1", "l2"]}]]},
        "map_two_swapped": {"source": a, "steps": [
            ["map", {"fn": "swap", "input_columns": ["label", "id"], "output_columns": ["x", "y"]}]]},
        "map_two_to_one": {"source": a, "steps": [
            ["map", {"fn": "first", "input_columns": ["score", "id"], "output_columns": ["score"]}]]},
        "map_in_place": {"source": a, "steps": [["map", {"fn": "plus1", "input_columns": ["vec"]}]]},
        "map_last_to_new": {"source": dict(a, columns_list=["vec", "label", "id"]), "steps": [
            ["map", {"fn": "same", "input_columns": ["id"], "output_columns": ["z"]}]]},
        "project": {"source": a, "steps": [["project", {"columns": ["score", "id", "vec"]}]]},
        "rename": {"source": dict(a, columns_list=["label", "image"]), "steps": [
            ["rename", {"input_columns": ["label"], "output_columns": ["zz"]}]]},
        "zip": {"source": dict(a, columns_list=["label", "vec"]), "steps": [
            ["zip", {"with": dict(b, columns_list=["score", "id"])}]]},
        "concat": {"source": scalars, "steps": [["concat", {"with": dict(b, columns_list=["label", "id"])}]]},
        "batch": {"source": dict(a, columns_list=["vec", "score", "label"]), "steps": [
            ["batch", {"batch_size": 4}]]},
        "batch_map": {"source": scalars, "steps": [
            ["batch", {"batch_size": 4, "per_batch_map": True, "input_columns": ["label", "id"],
                       "output_columns": ["p", "q"]}]]},
        "map_then_batch": {"source": dict(a, columns_list=["score", "vec"]), "steps": [
            ["map", {"fn": "dup", "input_columns": ["score"], "output_columns": ["s1", "s2"]}],
            ["batch", {"batch_size": 3}]]},
        "padded": {"source": dict(scalars, num_shards=2, shard_id=1, num_padded=2,
                                  padded_sample={"id": -1, "label": -1}),
                   "steps": []},
    }


def run_ours(spec, rows=8):
    data = build_pipeline(rds, spec)
    out = []
    for row in data.create_tuple_iterator(num_epochs=1, output_numpy=True):
        out.append(list(row))
        if len(out) == rows:
            break
    return data.get_col_names(), out


def _plain(value):
    """A value in a comparable form: MindSpore's ``S<n>`` bytes and our uint8 bytes as ``bytes``."""
    value = np.asarray(value)
    if value.dtype.kind == "S":
        return ("bytes", value.reshape(-1)[0] if value.size else b"")
    return value


def _same(ours, theirs, byte_columns):
    if byte_columns:
        return bytes(np.asarray(ours, dtype=np.uint8)) == _plain(theirs)[1]
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    return (ours.dtype == theirs.dtype and ours.shape == theirs.shape
            and np.array_equal(ours, theirs))


# --- recordio alone -------------------------------------------------------------------------------


def test_columns_list_sets_the_tuple_positions(files):
    data = rds.MindDataset(files["a"], columns_list=["image", "label"], shuffle=False)
    assert data.get_col_names() == ["image", "label"]
    image, label = next(iter(data.create_tuple_iterator(output_numpy=True)))
    assert bytes(image) == b"\x01" and int(label) == 0


def test_without_columns_list_names_are_sorted(files):
    data = rds.MindDataset(files["a"], shuffle=False)
    assert data.get_col_names() == SORTED
    row = next(iter(data.create_dict_iterator(output_numpy=True, num_epochs=1)))
    assert list(row) == SORTED
    values = next(iter(data.create_tuple_iterator(output_numpy=True, num_epochs=1)))
    assert [v.tolist() if isinstance(v, np.ndarray) else v for v in values] == \
        [row[n].tolist() if isinstance(row[n], np.ndarray) else row[n] for n in SORTED]


@pytest.mark.parametrize("name", sorted(pipelines({"a": "a", "b": "b"})))
def test_dict_keys_follow_the_column_names(files, name):
    data = build_pipeline(rds, pipelines(files)[name])
    names = data.get_col_names()
    it = data.create_dict_iterator(num_epochs=1, output_numpy=True)
    tuples = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    for row, values in zip(it, tuples):
        assert list(row) == names
        assert all(np.array_equal(row[n], v) for n, v in zip(names, values))


def test_reader_columns_give_the_key_order(files):
    with rio.FileReader(files["a"], columns=["vec", "image", "label"]) as reader:
        assert list(reader[0]) == ["vec", "image", "label"]
        assert [list(r) for r in reader.__getitems__([1, 2])] == [["vec", "image", "label"]] * 2
    with rio.FileReader(files["a"]) as reader:     # no selection: raw fields, then blob fields
        assert list(reader[0]) == ["id", "label", "name", "score", "image", "vec"]   # arrays are blobs


def test_index_only_columns_keep_their_order(tmp_path):
    path = str(tmp_path / "idx.mindrecord")
    with rio.FileWriter(path) as w:
        w.add_schema({"b": {"type": "int32"}, "a": {"type": "int64"}, "img": {"type": "bytes"}}, "idx")
        w.add_index(["a", "b"])
        w.write_raw_data([{"b": np.int32(i), "a": np.int64(10 + i), "img": b"x"} for i in range(5)])
    data = rds.MindDataset(path, columns_list=["b", "a"], shuffle=False)
    assert data._index_columns() is not None              # answered from the .db, no page read
    assert [list(map(int, t)) for t in data.create_tuple_iterator(output_numpy=True, num_epochs=1)] == \
        [[i, 10 + i] for i in range(5)]


@pytest.mark.slow
def test_torch_adapter_sink_and_train_follow_the_names(files):
    torch = pytest.importorskip("torch")
    data = rds.MindDataset(files["a"], columns_list=["vec", "label"], shuffle=False).batch(4)
    names = data.get_col_names()
    loader = torch.utils.data.DataLoader(rds.TorchDataset(data), batch_size=None)
    assert all(list(batch) == names for batch in loader)
    with rio.DataSink(data, device="cpu") as sink:
        assert all(list(batch) == names for batch in sink)
    seen = []

    class Model(torch.nn.Module):
        def forward(self, vec):
            seen.append(vec.shape)
            return vec.float().sum(1, keepdim=True).repeat(1, 3)

    model = Model()
    model.p = torch.nn.Parameter(torch.zeros(1))
    rio.train(model, lambda out, y: (out.sum() * 0 + model.p.sum()), torch.optim.SGD(model.parameters(), 0.1),
              data, 1, dataset_sink_mode=False, callbacks=[], device="cpu", columns=("vec", "label"))
    assert seen and all(s[1:] == (3,) for s in seen)          # the vec column reached the model


# --- MindSpore 2.10 as the oracle -----------------------------------------------------------------


@pytest.fixture(scope="module")
def oracle(mindspore_python, files, tmp_path_factory):
    specs = pipelines(files)
    jobs = [{"op": "pipeline", "pipeline": spec, "rows": 8} for spec in specs.values()]
    answers = run_oracle(mindspore_python, jobs, tmp_path_factory.mktemp("order-oracle"))
    return dict(zip(specs, answers))


@pytest.mark.mindspore
@pytest.mark.parametrize("name", sorted(pipelines({"a": "a", "b": "b"})))
def test_positions_match_mindspore(oracle, files, name):
    theirs = oracle[name]
    assert "error" not in theirs, f"MindSpore: {theirs.get('error')}"
    names, rows = run_ours(pipelines(files)[name])
    assert names == theirs["names"]
    their_rows = from_plain(theirs["rows"])
    assert len(rows) == len(their_rows)
    for i, (ours, mine) in enumerate(zip(rows, their_rows)):
        assert len(ours) == len(mine)
        for pos, (a, b) in enumerate(zip(ours, mine)):
            is_bytes = np.asarray(b).dtype.kind == "S"
            assert _same(a, b, is_bytes), (f"{name} row {i} position {pos} ({names[pos]}): "
                                           f"recordio {a!r}, MindSpore {b!r}")


@pytest.mark.parametrize("ins,outs", [(["name"], ["label", "q"]), (["label", "id"], ["x", "name"]),
                                      (["label"], ["a", "a"])])
def test_output_names_that_clash_are_refused(files, ins, outs):
    data = rds.MindDataset(files["a"], shuffle=False)
    with pytest.raises(rio.PipelineError, match="output_columns"):
        data.map(lambda *x: x, input_columns=ins, output_columns=outs)
