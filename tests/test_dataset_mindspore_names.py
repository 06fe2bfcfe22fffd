"""The ``mindspore.dataset`` names MindRecord scripts use: shuffle modes, ``RandomSampler(shuffle=)``,
``recordio.common.dtype`` (``mstype``), and MindSpore's bytes form as an option (lossless uint8 by
default)."""

import numpy as np
import pytest

import recordio as rio
import recordio.common.dtype as mstype
from ms_client import run_oracle
from ms_oracle import from_plain
from recordio import transforms, vision
from recordio.dataset import GeneratorDataset, MindDataset, RandomSampler, Shuffle, config
from recordio.dataset.order import shuffle as order


def test_partial_shuffles_within_windows_in_order():
    ids = order.partial_order(10, np.random.default_rng(0), window=4)
    assert sorted(ids[:4]) == [0, 1, 2, 3] and sorted(ids[4:8]) == [4, 5, 6, 7] and sorted(ids[8:]) == [8, 9]
    assert list(ids) != list(range(10))


def test_adaptive_is_global_up_to_the_limit_then_partial(monkeypatch):
    glob = order.shuffled_ids(Shuffle.GLOBAL, 50, 1, 0, None)
    assert np.array_equal(order.shuffled_ids(Shuffle.ADAPTIVE, 50, 1, 0, None), glob)
    monkeypatch.setattr(order, "ADAPTIVE_LIMIT", 10)
    monkeypatch.setattr(order, "PARTIAL_WINDOW", 8)
    assert np.array_equal(order.shuffled_ids(Shuffle.ADAPTIVE, 50, 1, 0, None),
                          order.partial_order(50, order.epoch_rng(1, 0), window=8))


@pytest.mark.parametrize("shuffle", [Shuffle.FALSE, False])
def test_shuffle_false_keeps_the_order(shuffle):
    ds = GeneratorDataset([(i,) for i in range(20)], ["x"], shuffle=shuffle)
    assert [int(r["x"]) for r in ds.create_dict_iterator(num_epochs=1, output_numpy=True)] == list(range(20))


def test_random_sampler_takes_a_shuffle_mode():
    rows = [(i,) for i in range(30)]
    for mode in (Shuffle.GLOBAL, Shuffle.PARTIAL, Shuffle.ADAPTIVE):
        ds = GeneratorDataset(rows, ["x"], sampler=RandomSampler(shuffle=mode))
        got = [int(r["x"]) for r in ds.create_dict_iterator(num_epochs=1, output_numpy=True)]
        assert sorted(got) == list(range(30)) and got != list(range(30))
    with pytest.raises(ValueError, match="shuffle"):
        RandomSampler(shuffle=Shuffle.FALSE)


def test_mstype_works_where_dtypes_are_taken():
    assert repr(mstype.int32) == "Int32" and mstype.float32.numpy_dtype == np.float32
    assert mstype.dtype_to_nptype(mstype.uint8) is np.uint8
    assert transforms.TypeCast(mstype.int32)(np.array([1.7, -2.5], np.float32)).dtype == np.int32
    assert mstype.int_ == mstype.int64 and mstype.int32 != mstype.int64
    with pytest.raises(TypeError):
        mstype.dtype_to_nptype(mstype.string)


@pytest.fixture(scope="module")
def blobs(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("bytes") / "b.mindrecord")
    values = [b"", b"\x00", b"ab\x00\x00", b"\x00\x00x", b"plain"]
    with rio.FileWriter(path) as w:
        w.add_schema({"blob": {"type": "bytes"}, "i": {"type": "int32"}}, "bytes forms")
        w.write_raw_data([{"blob": v, "i": k} for k, v in enumerate(values)])
    return path, values


def test_default_bytes_form_is_lossless_through_ops_and_iterators(blobs):
    path, values = blobs
    ds = MindDataset(path, shuffle=False).map(lambda b: b, input_columns="blob")
    numpy_rows = list(ds.create_dict_iterator(num_epochs=1, output_numpy=True))
    assert [r["blob"].tobytes() for r in numpy_rows] == values
    torch_rows = list(MindDataset(path, shuffle=False).create_dict_iterator(num_epochs=1))
    assert [bytes(r["blob"].numpy()) for r in torch_rows] == values
    batched = next(iter(MindDataset(path, shuffle=False).batch(5).create_dict_iterator(num_epochs=1, output_numpy=True)))
    assert [b.tobytes() for b in batched["blob"]] == values


def test_mindspore_bytes_form_is_an_s_array(blobs):
    path, values = blobs
    config.set_bytes_form("mindspore")
    try:
        rows = list(MindDataset(path, shuffle=False).create_dict_iterator(num_epochs=1, output_numpy=True))
        batch = next(iter(MindDataset(path, shuffle=False).batch(5).create_dict_iterator(num_epochs=1,
                                                                                         output_numpy=True)))
    finally:
        config.set_bytes_form("uint8")
    assert all(r["blob"].dtype.kind == "S" and r["blob"].shape == (1,) for r in rows)
    assert rows[4]["blob"][0] == b"plain" and rows[2]["blob"].tobytes() == b"ab\x00\x00"
    assert batch["blob"].dtype == np.dtype("S5") and batch["blob"].shape == (5,)
    with pytest.raises(ValueError, match="bytes form"):
        config.set_bytes_form("latin1")


def test_vision_ops_take_both_bytes_forms():
    import cv2
    jpeg = cv2.imencode(".png", np.full((4, 5, 3), 7, np.uint8))[1].tobytes()
    as_uint8 = vision.Decode()(np.frombuffer(jpeg, np.uint8))
    as_s = vision.Decode()(np.array([jpeg]))
    assert np.array_equal(as_uint8, as_s) and as_s.shape == (4, 5, 3)


@pytest.mark.mindspore
def test_names_and_the_bytes_form_match_mindspore(mindspore_python, blobs, tmp_path):
    path, _ = blobs
    [answer] = run_oracle(mindspore_python, [{"op": "read", "source": path, "readers": ["MindDataset"]}], tmp_path)
    theirs = from_plain(answer["MindDataset"])
    config.set_bytes_form("mindspore")
    try:
        ours = list(MindDataset(path, shuffle=False).create_dict_iterator(num_epochs=1, output_numpy=True))
    finally:
        config.set_bytes_form("uint8")
    for mine, their in zip(ours, theirs, strict=True):
        assert mine["blob"].dtype == their["blob"].dtype and mine["blob"].shape == their["blob"].shape
        assert mine["blob"].tobytes() == their["blob"].tobytes()


def test_minddataset_getitem_gives_the_row_in_column_order(blobs):
    path, values = blobs
    ds = MindDataset(path, columns_list=["i", "blob"], shuffle=False)
    i, blob = ds[2]
    assert int(i) == 2 and blob.tobytes() == values[2]
    assert [int(MindDataset(path, shuffle=False)[k][1]) for k in range(5)] == list(range(5))   # sorted: blob, i
    shuffled = MindDataset(path, columns_list=["i"])
    first_epoch = [int(r["i"]) for r in shuffled.create_dict_iterator(num_epochs=1, output_numpy=True)]
    assert [int(shuffled[k][0]) for k in range(5)] == first_epoch
    with pytest.raises(ValueError, match="negative"):
        ds[-1]
    with pytest.raises(IndexError):
        ds[5]


@pytest.fixture(scope="module")
def text_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("text")
    (folder / "b.txt").write_text("second file\n\nlast line")
    (folder / "a.txt").write_text("first line\r\nsecond line\n")
    return folder


def test_text_file_dataset_reads_non_empty_lines_of_sorted_files(text_files):
    from recordio.dataset import TextFileDataset
    ds = TextFileDataset(str(text_files / "*.txt"), shuffle=False)
    got = [str(r["text"]) for r in ds.create_dict_iterator(num_epochs=1, output_numpy=True)]
    assert got == ["first line\r", "second line", "second file", "last line"]      # MindSpore keeps the \r
    shuffled = TextFileDataset([str(text_files / "b.txt"), str(text_files / "a.txt")])
    assert sorted(str(r["text"]) for r in shuffled.create_dict_iterator(num_epochs=1, output_numpy=True)) == \
        sorted(got)
    with pytest.raises(FileNotFoundError):
        TextFileDataset(str(text_files / "*.csv"))


@pytest.mark.mindspore
def test_text_file_dataset_and_getitem_match_mindspore(mindspore_python, text_files, blobs, tmp_path):
    import subprocess
    path, _ = blobs
    script = (
        "import sys, pickle, numpy as np\n"
        "import mindspore.dataset as ds\n"
        f"t = ds.TextFileDataset({str(text_files / '*.txt')!r}, shuffle=False, num_parallel_workers=1)\n"
        "lines = [str(r['text']) for r in t.create_dict_iterator(num_epochs=1, output_numpy=True)]\n"
        f"m = ds.MindDataset({path!r}, columns_list=['i', 'blob'], shuffle=False)\n"
        "row = [(a.dtype.str, a.shape, a.tobytes()) for a in m[3]]\n"
        "pickle.dump((lines, row, [m.get_col_names()]), open(sys.argv[1], 'wb'), protocol=4)\n")
    (tmp_path / "run.py").write_text(script)
    done = subprocess.run([mindspore_python, str(tmp_path / "run.py"), str(tmp_path / "out.pkl")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    import pickle
    lines, row, _ = pickle.load(open(tmp_path / "out.pkl", "rb"))
    from recordio.dataset import TextFileDataset
    ours = [str(r["text"]) for r in TextFileDataset(str(text_files / "*.txt"), shuffle=False)
            .create_dict_iterator(num_epochs=1, output_numpy=True)]
    assert ours == lines
    mine = MindDataset(path, columns_list=["i", "blob"], shuffle=False)[3]
    assert int(mine[0]) == int(np.frombuffer(row[0][2], np.dtype(row[0][0]))[0]) and mine[0].dtype.str == row[0][0]
    assert mine[1].tobytes() == row[1][2]


def _callback_log(module, step_size, rows=5, epochs=2, workers=1):
    log = []

    class Rec(module.DSCallback):
        def __init__(self):
            super().__init__(step_size)

        def _add(self, kind, c):
            log.append((kind, c.cur_epoch_num, c.cur_step_num_in_epoch, c.cur_step_num))

        def ds_begin(self, c):
            self._add("begin", c)

        def ds_epoch_begin(self, c):
            self._add("epoch_begin", c)

        def ds_epoch_end(self, c):
            self._add("epoch_end", c)

        def ds_step_begin(self, c):
            self._add("step_begin", c)

        def ds_step_end(self, c):
            self._add("step_end", c)

    data = module.GeneratorDataset([(i,) for i in range(rows)], ["x"], shuffle=False, num_parallel_workers=1)
    data = data.map(lambda x: x, callbacks=Rec(), num_parallel_workers=workers)
    it = data.create_tuple_iterator(num_epochs=epochs)
    for _ in range(epochs):
        for _ in it:
            pass
    return log


def _by_kind(log):
    return {kind: [e for e in log if e[0] == kind] for kind in {e[0] for e in log}}


@pytest.mark.parametrize("step_size", [1, 2])
def test_ds_callbacks_see_epochs_and_steps(step_size):
    import recordio.dataset as rds
    log = _by_kind(_callback_log(rds, step_size, workers=2))
    assert log["begin"] == [("begin", 0, 0, 0)]
    assert log["epoch_begin"] == [("epoch_begin", 1, 0, 0), ("epoch_begin", 2, 0, 5)]
    assert log["epoch_end"] == [("epoch_end", 1, 5, 5), ("epoch_end", 2, 5, 10)]
    steps = [k for k in range(1, 6) if (k - 1) % step_size == 0]
    expected = [(e, k, 5 * (e - 1) + k) for e in (1, 2) for k in steps]
    assert [e[1:] for e in log["step_begin"]] == expected == [e[1:] for e in log["step_end"]]
    with pytest.raises(ValueError, match="step_size"):
        rds.DSCallback(0)


@pytest.mark.mindspore
def test_ds_callbacks_match_mindspore(mindspore_python, tmp_path):
    import inspect
    import pickle
    import subprocess
    source = "import pickle, sys\nimport mindspore.dataset as module\n" + inspect.getsource(_callback_log) + \
        "pickle.dump([_callback_log(module, s) for s in (1, 2)], open(sys.argv[1], 'wb'))\n"
    (tmp_path / "run.py").write_text(source)
    done = subprocess.run([mindspore_python, str(tmp_path / "run.py"), str(tmp_path / "out.pkl")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    theirs = pickle.load(open(tmp_path / "out.pkl", "rb"))
    import recordio.dataset as rds
    for step_size, their in zip((1, 2), theirs):
        assert _by_kind(_callback_log(rds, step_size)) == _by_kind(their)


@pytest.mark.parametrize("sizes,expected", [([0.9, 0.1], [9, 1]), ([3, 7], [3, 7]), ([0.33, 0.33, 0.34], [4, 3, 3]),
                                            ([0.5, 0.49, 0.01], [5, 5, 0])])
def test_split_sizes_follow_mindspore(sizes, expected):
    from recordio.dataset.source import split_sizes
    if 0 in expected:
        with pytest.raises(rio.PipelineError, match="too small"):
            split_sizes(sizes, 10)
    else:
        assert split_sizes(sizes, 10) == expected


@pytest.mark.parametrize("randomize", [False, True])
def test_split_gives_disjoint_fixed_parts(blobs, randomize):
    path, _ = blobs
    parts = MindDataset(path, columns_list=["i"]).split([0.6, 0.4], randomize=randomize)
    epochs = [[[int(r["i"]) for r in p.create_dict_iterator(num_epochs=1, output_numpy=True)] for p in parts]
              for _ in range(2)]
    assert epochs[0] == epochs[1]                                   # the same order every epoch
    first, second = epochs[0]
    assert len(first) == 3 and len(second) == 2 and sorted(first + second) == list(range(5))
    if not randomize:
        assert first == [0, 1, 2] and second == [3, 4]
    assert [p.get_dataset_size() for p in parts] == [3, 2]
    with pytest.raises(rio.PipelineError, match="sharded"):
        MindDataset(path, num_shards=2, shard_id=0).split([0.5, 0.5])


@pytest.fixture(scope="module")
def ten(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("blocks") / "ten.mindrecord")
    with rio.FileWriter(path) as w:
        w.add_schema({"i": {"type": "int32"}}, "ten rows")
        w.write_raw_data([{"i": i} for i in range(10)])
    return path


def _shards_by_block(path, num, env=False, **kw):
    out = []
    for k in range(num):
        ds = MindDataset(path, shuffle=False, num_shards=num, shard_id=k, **kw)
        out.append([int(r["i"]) for r in ds.create_dict_iterator(num_epochs=1, output_numpy=True)])
    return out


def test_shard_by_block_gives_contiguous_blocks(ten, monkeypatch):
    assert _shards_by_block(ten, 4, shard_by_block=True) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 0, 1]]
    assert _shards_by_block(ten, 4) == [[0, 4, 8], [1, 5, 9], [2, 6, 0], [3, 7, 1]]
    monkeypatch.setenv("MS_DEV_MINDRECORD_SHARD_BY_BLOCK", "true")
    assert _shards_by_block(ten, 3) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 0, 1]]


def test_padded_sample_may_hold_more_keys_than_columns_list(ten):
    ds = MindDataset(ten, columns_list=["i"], shuffle=False, num_shards=4, shard_id=3, num_padded=2,
                     padded_sample={"i": -1, "extra": b"ignored"})
    assert [int(r["i"]) for r in ds.create_dict_iterator(num_epochs=1, output_numpy=True)] == [3, 7, -1]


@pytest.mark.mindspore
@pytest.mark.parametrize("num", [3, 4])
def test_shard_by_block_matches_mindspore(mindspore_python, ten, num):
    import os
    import subprocess
    code = ("import mindspore.dataset as ds\n"
            f"print([[int(r['i']) for r in ds.MindDataset({ten!r}, shuffle=False, num_shards={num}, shard_id=k)"
            f".create_dict_iterator(num_epochs=1, output_numpy=True)] for k in range({num})])")
    done = subprocess.run([mindspore_python, "-c", code], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, MS_DEV_MINDRECORD_SHARD_BY_BLOCK="true", GLOG_v="3"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == str(_shards_by_block(ten, num, shard_by_block=True))


def test_reset_is_mindsporess_no_op_between_iterators(tmp_path):
    import recordio as rio

    path = str(tmp_path / "r.mindrecord")
    with rio.FileWriter(path) as writer:
        writer.add_schema({"a": {"type": "int32"}}, "r")
        writer.write_raw_data([{"a": i} for i in range(6)])
    data = rio.MindDataset(path, shuffle=False).batch(2)
    seen = []
    for _ in range(3):
        seen.append([b[0].tolist() for b in data.create_tuple_iterator(num_epochs=1, output_numpy=True)])
        assert data.reset() is None
    assert seen == [[[0, 1], [2, 3], [4, 5]]] * 3


def test_global_shuffle_moves_padded_rows_between_shards(tmp_path):
    import recordio as rio

    path = str(tmp_path / "p.mindrecord")
    with rio.FileWriter(path) as writer:
        writer.add_schema({"id": {"type": "int32"}}, "p")
        writer.write_raw_data([{"id": i} for i in range(10)])
    epochs = []
    for shard in range(3):
        ds = rio.MindDataset(path, ["id"], num_shards=3, shard_id=shard, padded_sample={"id": -1}, num_padded=2)
        iterator = ds.create_dict_iterator(num_epochs=4, output_numpy=True)
        epochs.append([[int(r["id"]) for r in iterator] for _ in range(4)])      # one epoch per pass
    for e in range(4):
        rows = sorted(i for shard in epochs for i in shard[e])
        assert rows == [-1, -1] + list(range(10))            # every row once, both padded rows, each epoch
    holders = {tuple(sorted(s for s in range(3) if -1 in epochs[s][e])) for e in range(4)}
    assert len(holders) > 1                                  # the padded rows do not stay in one shard
    unshuffled = rio.MindDataset(path, ["id"], num_shards=3, shard_id=2, padded_sample={"id": -1}, num_padded=2,
                                 shuffle=False)
    iterator = unshuffled.create_dict_iterator(num_epochs=2, output_numpy=True)
    first, second = ([int(r["id"]) for r in iterator] for _ in range(2))
    assert first == second and first[-1] == -1              # without a shuffle the padded rows close the order
