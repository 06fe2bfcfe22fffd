"""Every pipeline operation: map, batch, shuffle, repeat, project, rename, filter, zip, concat,
take, skip, save; column facts; iterator output types; the not-a-tree check."""

import numpy as np
import pytest
import torch

from recordio.dataset import GeneratorDataset, MindDataset
from numbered import ids_of, numbered_rows, write_numbered
from recordio.errors import PipelineError


def numbered(n=10, **kw):
    rows = numbered_rows(n)
    cols = ["id", "label", "vec", "name", "data"]
    return GeneratorDataset([tuple(r[c] for c in cols) for r in rows], cols, shuffle=False, **kw)


def rows_of(ds, epochs=1):
    return list(ds.create_dict_iterator(num_epochs=epochs, output_numpy=True))


def test_map_one_column():
    out = rows_of(numbered().map(lambda v: v * 2, input_columns="vec"))
    assert [float(r["vec"][0]) for r in out] == [2.0 * i for i in range(10)]


def test_map_several_inputs_to_new_outputs():
    ds = numbered().map(lambda i, v: (i + 1, v.sum()), input_columns=["id", "vec"],
                        output_columns=["next", "total"])
    assert ds.get_col_names() == ["next", "label", "total", "name", "data"]   # one for one, as MindSpore
    row = rows_of(ds)[3]
    assert int(row["next"]) == 4 and float(row["total"]) == 12.0 and "vec" not in row


def test_map_chains_a_list_of_operations():
    ds = numbered().map([lambda v: v + 1, lambda v: v * 10], input_columns="vec")
    assert float(rows_of(ds)[2]["vec"][0]) == 30.0


def test_map_gives_ops_numpy_values():
    seen = []
    ds = numbered(2).map(lambda d, n: (seen.append((type(d), d.dtype, n.dtype.kind)), d)[1],
                         input_columns=["data", "name"], output_columns=["data"], num_parallel_workers=1)
    rows_of(ds)
    assert seen[0] == (np.ndarray, np.uint8, "U")


def test_map_with_wrong_output_count_names_the_map():
    ds = numbered().map(lambda v: (v, v), input_columns="vec")
    with pytest.raises(PipelineError, match="returned 2 value"):
        rows_of(ds)


def test_map_unknown_column():
    pipeline = numbered().map(lambda v: v, input_columns="nope")     # built, as in MindSpore; fails when run
    with pytest.raises(PipelineError, match="not in the pipeline"):
        rows_of(pipeline)


def test_batch_stacks_what_it_can():
    batch = rows_of(numbered(10).batch(4))[0]
    assert batch["vec"].shape == (4, 4) and batch["id"].tolist() == [0, 1, 2, 3]
    assert isinstance(batch["data"], list) and len(batch["data"]) == 4
    assert isinstance(batch["name"], list) and str(batch["name"][1]) == "row-1"


@pytest.mark.parametrize("drop,sizes", [(False, [4, 4, 2]), (True, [4, 4])])
def test_batch_remainder(drop, sizes):
    ds = numbered(10).batch(4, drop_remainder=drop)
    assert [len(b["id"]) for b in rows_of(ds)] == sizes
    assert ds.get_dataset_size() == len(sizes)


def test_batch_per_batch_map_and_pad_info():
    def per_batch(ids, data, info):
        return [i * 100 + info.get_batch_num() for i in ids], data

    ds = numbered(6).batch(3, per_batch_map=per_batch, input_columns=["id", "data"],
                           pad_info={"data": (None, 255)})
    first, second = rows_of(ds)
    assert first["id"].tolist() == [0, 100, 200] and second["id"].tolist() == [301, 401, 501]
    assert first["data"].shape == (3, 3) and first["data"][0].tolist() == [0, 255, 255]


def test_shuffle_buffer_is_a_deterministic_permutation():
    a = ids_of(numbered(50).shuffle(8).create_dict_iterator(num_epochs=1, output_numpy=True))
    b = ids_of(numbered(50).shuffle(8).create_dict_iterator(num_epochs=1, output_numpy=True))
    assert sorted(a) == list(range(50)) and a != list(range(50)) and a == b


def test_repeat_counts_data_epochs():
    ds = numbered(5).map(lambda x: x, input_columns="id").repeat(3)
    assert ds.get_dataset_size() == 15
    assert ids_of(ds.create_dict_iterator(num_epochs=1, output_numpy=True)) == list(range(5)) * 3


def test_project_and_rename():
    ds = numbered(3).project(["vec", "id"]).rename(["id"], ["index"])
    assert ds.get_col_names() == ["vec", "index"]
    assert list(rows_of(ds)[0]) == ["vec", "index"]


def test_filter():
    ds = numbered(20).filter(lambda label: label == 2, input_columns=["label"])
    assert ids_of(ds.create_dict_iterator(num_epochs=1, output_numpy=True)) == [2, 7, 12, 17]
    assert ds.get_dataset_size() == 4


def test_take_and_skip():
    ds = numbered(10).skip(3).take(4)
    assert ids_of(ds.create_dict_iterator(num_epochs=1, output_numpy=True)) == [3, 4, 5, 6]
    assert numbered(10).skip(3).take(4).get_dataset_size() == 4


def test_zip_and_its_column_clash():
    left = numbered(5).project(["id"])
    right = numbered(3).project(["vec"])
    ds = left.zip(right)
    assert ds.get_col_names() == ["id", "vec"] and ds.get_dataset_size() == 3
    assert len(rows_of(ds)) == 3
    with pytest.raises(PipelineError, match="zip"):
        numbered(2).zip(numbered(2))


def test_concat():
    ds = numbered(3).project(["id"]) + numbered(2).project(["id"])
    assert ids_of(ds.create_dict_iterator(num_epochs=1, output_numpy=True)) == [0, 1, 2, 0, 1]
    assert ds.get_dataset_size() == 5


def test_a_node_with_two_consumers_is_not_a_tree():
    base = numbered(4)
    first = base.map(lambda x: x, input_columns="id")
    second = base.map(lambda x: x, input_columns="vec")   # alive: base has a second consumer
    assert second.get_col_names()
    with pytest.raises(PipelineError, match=r"not a tree \(i.e., one node has 2 consumers\)"):
        first.create_dict_iterator()


def test_facts():
    ds = numbered(6).batch(2)
    assert ds.get_col_names() == ["id", "label", "vec", "name", "data"]
    assert ds.output_shapes()[:3] == [[2], [2], [2, 4]]
    assert ds.output_types()[:3] == [np.int64, np.int32, np.float32]
    assert ds.get_batch_size() == 2


def test_output_types_numpy_and_torch():
    row = rows_of(numbered(1))[0]
    assert row["id"].shape == () and row["name"].dtype.kind == "U" and row["data"].dtype == np.uint8
    trow = next(iter(numbered(1).create_dict_iterator(num_epochs=1)))
    assert isinstance(trow["vec"], torch.Tensor) and trow["vec"].dtype == torch.float32
    assert trow["name"] == "row-0" and trow["data"].dtype == torch.uint8
    tup = next(iter(numbered(1).create_tuple_iterator(num_epochs=1, output_numpy=True)))
    assert int(tup[0]) == 0 and len(tup) == 5


def test_iterator_epochs():
    it = numbered(3).create_dict_iterator(num_epochs=2, output_numpy=True)
    assert [len(list(it)) for _ in range(3)] == [3, 3, 0]


def test_save_then_read_back(tmp_path):
    ds = numbered(9).map(lambda v: v * 2, input_columns="vec")
    ds.save(str(tmp_path / "out.mindrecord"), num_files=2)
    back = MindDataset(str(tmp_path / "out.mindrecord0"), shuffle=False)
    got = sorted(rows_of(back), key=lambda r: int(r["id"]))
    want = rows_of(numbered(9).map(lambda v: v * 2, input_columns="vec"))
    assert len(got) == 9
    for g, w in zip(got, want):
        assert all(np.array_equal(g[c], w[c]) for c in w)


def test_save_of_a_mindrecord_pipeline(tmp_path):
    src = write_numbered(tmp_path / "src.mindrecord", 7)
    even = MindDataset(src, shuffle=False).filter(lambda i: i % 2 == 0, ["id"])
    even.save(str(tmp_path / "even.mindrecord"))
    back = MindDataset(str(tmp_path / "even.mindrecord"), shuffle=False)
    assert ids_of(back.create_dict_iterator(num_epochs=1, output_numpy=True)) == [0, 2, 4, 6]


def test_unknown_or_unsupported_arguments_are_refused():
    with pytest.raises(TypeError):
        numbered().map(lambda x: x, input_columns="id", colum_order=["id"])
    with pytest.raises(NotImplementedError, match="cache"):
        numbered().map(lambda x: x, input_columns="id", cache=object())
    assert numbered().map(lambda x: x, "id", max_rowsize=16).batch(2, max_rowsize=4).get_dataset_size() == 5


def test_flat_map_concatenates_the_datasets_each_row_gives(tmp_path):
    path = write_numbered(tmp_path / "f.mindrecord", 6)
    lines = tmp_path / "parts.txt"
    lines.write_text("2\n0\n5\n")
    from recordio.dataset import SequentialSampler, TextFileDataset

    def part(line):
        start = int(str(line))
        return MindDataset(path, columns_list=["id"], sampler=SequentialSampler(start, 2))

    data = TextFileDataset(str(lines), shuffle=False).flat_map(part)
    assert ids_of(data.create_dict_iterator(num_epochs=1, output_numpy=True)) == [2, 3, 0, 1, 5]
    assert data.get_dataset_size() == 5
    one = TextFileDataset(str(lines), shuffle=False, num_samples=1).flat_map(part)
    assert ids_of(one.create_dict_iterator(num_epochs=1, output_numpy=True)) == [2, 3]
    with pytest.raises(TypeError, match="must return a Dataset object.*row 0"):
        TextFileDataset(str(lines), shuffle=False).flat_map(lambda line: [line])
    with pytest.raises(TypeError, match="func must be a function"):
        TextFileDataset(str(lines)).flat_map(3)
