"""FileReader.read_batch: batched, columnar reads equal the row-wise reads, value for value."""

import gc
import glob
import os

import numpy as np
import pytest

from recordio import FileReader, FileWriter
from recordio.errors import FormatError
from recordio.mindrecord import codec
from recordio.mindrecord.read import column_decode, columns
from recordio.mindrecord.read.columns import BytesColumn
from rowcheck import values_equal
from conftest import GOLDEN_COPIES


def _cases():
    return sorted(p.name for p in GOLDEN_COPIES.iterdir() if p.is_dir())


def _files(case):
    return sorted(f for f in glob.glob(str(GOLDEN_COPIES / case / "*.mindrecord*")) if not f.endswith(".db"))


def assert_batch_equal(reader, batch, rows, names=None):
    """``batch`` (read_batch's dict) holds exactly ``reader[i]`` for each ``i`` in ``rows``."""
    rows = list(rows)
    expected = [reader[i] for i in rows]
    names = list(expected[0]) if expected and names is None else names
    assert list(batch) == list(names if names is not None else batch)
    schema = reader.schema
    for name in batch:
        column = batch[name]
        assert len(column) == len(rows), name
        spec = schema[name]
        if spec["type"] == "bytes":
            assert isinstance(column, (np.ndarray, BytesColumn)), name
            if isinstance(column, np.ndarray):
                assert column.dtype == np.uint8 and column.ndim == 2
                got = [column[j].tobytes() for j in range(len(rows))]
            else:
                got = column.tolist()
                assert [bytes(m) for m in column.memoryviews()] == got
            assert got == [r[name] for r in expected], name
            continue
        if spec["type"] == "string":
            assert isinstance(column, list) and column == [r[name] for r in expected], name
            continue
        if "shape" not in spec:
            assert isinstance(column, np.ndarray) and column.ndim == 1, name
        elif isinstance(column, list):
            assert len({v.shape for v in column}) > 1, f"{name}: equal shapes should be stacked"
        for j, row in enumerate(expected):
            assert values_equal(column[j], row[name]), f"{name}: row {rows[j]}: {column[j]!r} != {row[name]!r}"


def assert_items_equal(reader, rows):
    """``reader.__getitems__(rows)`` (torch's batched fetch, read as one batch) equals ``reader[i]`` row
    by row: keys in order, value types, dtypes, shapes and values."""
    got = reader.__getitems__(rows)
    expected = [reader[i] for i in rows]
    assert len(got) == len(expected)
    for j, (g, e) in enumerate(zip(got, expected)):
        assert type(g) is dict and list(g) == list(e), f"row {rows[j]}: keys {list(g)} != {list(e)}"
        for name in e:
            assert values_equal(g[name], e[name]), f"{name}: row {rows[j]}: {g[name]!r} != {e[name]!r}"


def _no_fallback(*args):
    raise AssertionError("the batch went through the row-wise decoder")


def _orders(n):
    rng = np.random.default_rng(7)
    yield list(range(n))                          # sequential
    yield rng.permutation(n).tolist()             # shuffled
    yield list(range(n))[1::3]                    # a shard's share: every 3rd row
    yield list(range(n // 2, n))                  # resumed half way
    yield [n - 1]                                 # one row
    yield [-1, -n, 0, 0]                          # negative rows, repeated rows


@pytest.mark.parametrize("use_index", [True, False], ids=["db", "page-table"])
@pytest.mark.parametrize("case", _cases())
def test_golden_batches_equal_rows(case, use_index):
    files = _files(case)
    with FileReader(files if len(files) > 1 else files[0], use_index=use_index) as reader:
        n = len(reader)
        for rows in _orders(n):
            assert_batch_equal(reader, reader.read_batch(rows), [r % n for r in rows])
            assert_items_equal(reader, rows)
        for size in (1, 7, 64):
            for first in range(0, n, size):
                assert_batch_equal(reader, reader.read_batch(slice(first, first + size)),
                                   range(first, min(n, first + size)))
        empty = reader.read_batch([])
        assert list(empty) == list(reader[0]) and all(len(v) == 0 for v in empty.values())


@pytest.mark.parametrize("case", ["matrix_s4_index", "sparse_shards", "multi_blob"])
def test_golden_column_subsets_and_orders(case):
    files = _files(case)
    with FileReader(files) as reader:
        names = list(reader.schema)
        rng = np.random.default_rng(3)
        for pick in (names[::-1], names[:1], names[-1:]):
            rows = rng.permutation(len(reader)).tolist()
            batch = reader.read_batch(rows, columns=pick)
            assert list(batch) == pick
            with FileReader(files, columns=pick) as narrow:
                assert_batch_equal(narrow, batch, rows, pick)
                assert_batch_equal(narrow, narrow.read_batch(rows), rows, pick)


def _all_types(path, n=300, equal_bytes=False, seed=0, shards=3):
    rng = np.random.default_rng(seed)
    schema = {"i32": {"type": "int32"}, "i64": {"type": "int64"}, "f32": {"type": "float32"},
              "f64": {"type": "float64"}, "s": {"type": "string"}, "b": {"type": "bytes"},
              "fixed": {"type": "float32", "shape": [2, 3]}, "ints": {"type": "int64", "shape": [-1]},
              "ints32": {"type": "int32", "shape": [2, -1]}, "vec": {"type": "float64", "shape": [-1, 2]}}
    rows = []
    for i in range(n):
        k = 1 + int(rng.integers(0, 4))
        rows.append({"i32": np.int32(rng.integers(-2**31, 2**31)), "i64": int(rng.integers(-2**62, 2**62)),
                     "f32": float(np.float32(rng.standard_normal())), "f64": float(rng.standard_normal()),
                     "s": f"row-{i}-é" * (i % 3), "b": bytes(rng.integers(0, 256, 5 if equal_bytes else i % 9,
                                                                           dtype=np.uint8)),
                     "fixed": rng.standard_normal((2, 3)).astype(np.float32),
                     "ints": rng.integers(-2**40, 2**40, k).astype(np.int64),
                     "ints32": rng.integers(-99, 99, (2, k)).astype(np.int32),
                     "vec": rng.standard_normal((k, 2))})
    writer = FileWriter(path, shards)
    writer.add_schema(schema, "all types")
    writer.write_raw_data(rows)
    writer.commit()
    return rows


def _record_reader(monkeypatch, which):
    """Raw records read by the compiled reader only, or by the msgpack stream only (its fallback)."""
    if which == "compiled":
        if codec.BACKEND != "c":
            pytest.skip("the compiled codec is not built")
        monkeypatch.setattr(column_decode, "_records", _no_fallback)
    else:
        monkeypatch.setattr(codec, "read_records", lambda *args: None)


@pytest.mark.parametrize("records", ["compiled", "msgpack"])
@pytest.mark.parametrize("equal_bytes", [False, True])
def test_every_schema_type(tmp_path, equal_bytes, records, monkeypatch):
    monkeypatch.setattr(columns, "_rowwise", _no_fallback)        # well-formed data: the fast path only
    _record_reader(monkeypatch, records)
    path = str(tmp_path / "t.mindrecord")
    _all_types(path, equal_bytes=equal_bytes)
    with FileReader(path + "0") as reader:
        n = len(reader)
        for rows in _orders(n):
            batch = reader.read_batch(rows)
            assert_batch_equal(reader, batch, [r % n for r in rows])
            varied = len({len(reader[r]["b"]) for r in rows}) > 1
            assert isinstance(batch["b"], BytesColumn if varied else np.ndarray)
            assert varied or equal_bytes or len(rows) <= 4
            assert batch["fixed"].shape == (len(rows), 2, 3) and batch["fixed"].dtype == np.float32
            assert batch["i32"].dtype == np.int32 and batch["f32"].dtype == np.float32
        assert_batch_equal(reader, reader.read_batch(range(5, 250, 4)), range(5, 250, 4))
        for rows in _orders(n):
            assert_items_equal(reader, rows)
        assert reader.__getitems__([]) == []
        for row in reader.__getitems__(list(range(0, n, 7))):    # arrays of their own: a kept row pins no batch
            arrays = [v for v in row.values() if isinstance(v, np.ndarray)]
            assert len(arrays) == 4 and all(a.base is None or a.base.nbytes == a.nbytes for a in arrays)
        one = reader.read_batch([10], columns=["ints", "vec"])
        assert one["ints"].shape == (1, reader[10]["ints"].size)          # one row: stacked


@pytest.mark.parametrize("records", ["compiled", "msgpack"])
def test_fixed_size_blobs_at_a_stride(tmp_path, records, monkeypatch):
    """Equal-size blobs, many pages: strided copies in order, row by row when shuffled."""
    monkeypatch.setattr(columns, "_rowwise", _no_fallback)
    _record_reader(monkeypatch, records)
    path = str(tmp_path / "c.mindrecord")
    rng = np.random.default_rng(1)
    writer = FileWriter(path, 2)
    writer.add_schema({"image": {"type": "bytes"}, "label": {"type": "int32"}}, "cifar-like")
    writer.set_page_size(1 << 16)
    writer.write_raw_data([{"image": rng.integers(0, 256, 3072, dtype=np.uint8).tobytes(),
                            "label": np.int32(i % 10)} for i in range(700)])
    writer.commit()
    with FileReader(path + "0") as reader:
        n = len(reader)
        for rows in (range(0, n), range(3, 259), rng.permutation(n)[:256].tolist(), [5, 9], [n - 1]):
            batch = reader.read_batch(rows)
            assert batch["image"].shape == (len(rows), 3072)
            assert_batch_equal(reader, batch, rows)


def test_verify_mode_and_errors(tmp_path):
    path = str(tmp_path / "v.mindrecord")
    _all_types(path, n=60)
    with FileReader(path + "0", verify=True) as reader:
        assert_batch_equal(reader, reader.read_batch(slice(None)), range(len(reader)))
    with FileReader(path + "0") as reader:
        with pytest.raises(IndexError, match="row 500"):
            reader.read_batch([0, 500])
        with pytest.raises(IndexError, match="row -61"):
            reader.__getitems__([0, -61])
        with pytest.raises(TypeError):
            reader.__getitems__([0, 1.5])                   # not truncated to row 1
        with pytest.raises(TypeError):
            reader.read_batch([0.5])
        with pytest.raises(Exception, match="nope"):
            reader.read_batch([0], columns=["nope"])


def test_corrupt_record_raises_the_row_error(tmp_path):
    """A raw record that is not what the schema says: the row-wise decoder's error, naming the row."""
    path = str(tmp_path / "x.mindrecord")
    _all_types(path, n=40)
    path += "0"
    with FileReader(path) as reader:
        _, _, locs = reader.shard_set.locations.bulk(np.array([7]))
        start, end = locs[0, :2].tolist()
    data = bytearray(open(path, "rb").read())
    record = bytes(data[start:end])
    data[start:end] = record.replace(b"\xa3i32", b"\xa3i33")          # a field renamed
    open(path, "wb").write(bytes(data))
    with FileReader(path, verify=False) as reader:      # the decoder's errors, not the checksums'
        with pytest.raises(FormatError) as row_error:
            reader[7]
        with pytest.raises(FormatError) as batch_error:
            reader.read_batch(range(0, 10))
        assert str(batch_error.value) == str(row_error.value)
        with pytest.raises(FormatError) as items_error:
            reader.__getitems__([9, 8, 7, 6])
        assert str(items_error.value) == str(row_error.value)
        assert_batch_equal(reader, reader.read_batch(range(8, 13)), range(8, 13))


def test_batches_release_maps_after_close(tmp_path):
    path = str(tmp_path / "m.mindrecord")
    _all_types(path, n=200, equal_bytes=True)
    reader = FileReader(path + "0")
    batches = [reader.read_batch(range(i, i + 50)) for i in range(0, 200, 50)]
    batches.append(reader.read_batch(np.random.default_rng(0).permutation(200)))
    expected = [reader[i] for i in range(50)]
    reader.close()                                   # a map with views exported would raise BufferError
    assert not reader.shard_set.maps
    for j, row in enumerate(expected):               # the values outlive the maps
        assert batches[0]["b"][j].tobytes() == row["b"] and values_equal(batches[0]["fixed"][j], row["fixed"])
    with pytest.raises(ValueError, match="closed"):
        reader.read_batch([0])
    del batches
    gc.collect()
    assert os.path.exists(path + "0")


def test_encrypted_dataset(tmp_path):
    from recordio.mindrecord import set_enc_key
    set_enc_key("abcdefghijklmnop01234567")
    try:
        path = str(tmp_path / "e.mindrecord")
        _all_types(path, n=50, shards=1)
        with FileReader(path) as reader:
            rows = np.random.default_rng(2).permutation(len(reader))
            assert_batch_equal(reader, reader.read_batch(rows), rows.tolist())
    finally:
        set_enc_key(None)


@pytest.mark.parametrize("case", _cases())
def test_row_wise_fallback_gives_the_same_columns(case, monkeypatch):
    """The batch the row-wise decoder builds (used when the fast path declines) has the fast path's form."""
    files = _files(case)
    with FileReader(files) as reader:
        rows = np.random.default_rng(4).permutation(len(reader)).tolist()
        fast = reader.read_batch(rows)

        def decline(*args):
            raise columns.Declined
        monkeypatch.setattr(columns, "decode_columns", decline)
        slow = reader.read_batch(rows)
        assert_batch_equal(reader, slow, rows)
        assert_items_equal(reader, rows)
        assert list(slow) == list(fast)
        for name in fast:
            assert type(slow[name]) is type(fast[name]), name


@pytest.mark.slow
def test_memory_stays_bounded_when_batches_are_dropped(tmp_path):
    import tracemalloc
    path = str(tmp_path / "mem.mindrecord")
    _all_types(path, n=300, equal_bytes=True)
    with FileReader(path + "0") as reader:
        order = np.random.default_rng(9).permutation(len(reader))
        reader.read_batch(order[:64])                                    # warm: locations, maps
        tracemalloc.start()
        try:
            for i in range(40):
                reader.read_batch(order[(i * 7) % 200:(i * 7) % 200 + 64])
            first = tracemalloc.get_traced_memory()[0]
            for i in range(400):
                reader.read_batch(order[(i * 7) % 200:(i * 7) % 200 + 64])
            grown = tracemalloc.get_traced_memory()[0] - first
        finally:
            tracemalloc.stop()
    assert grown < 256 * 1024, f"{grown} bytes kept after dropping 400 batches"


def test_a_record_parsed_across_its_end_is_refused_as_the_row_wise_read_refuses_it(tmp_path):
    """Row 0's raw record is cut inside a uint64, whose missing bytes are row 1's first 8: parsed as one
    stream the two records would give two plausible rows ({name: 'xxxxxx', id: 5}, {id: 9, name: 'evil'}).
    Each record must end where the index says it ends."""
    path = str(tmp_path / "cut.mindrecord")
    with FileWriter(path) as w:
        w.add_schema({"id": {"type": "int64"}, "name": {"type": "string"}})
        w.write_raw_data([{"id": 1, "name": "xxxxxx"}, {"id": 2, "name": "y" * 12}])
    r0 = b"\x82\xa4name\xa6xxxxxx\xa2id\xcf"                                  # 17 bytes, as written
    r1 = (5).to_bytes(8, "big") + b"\x82\xa2id\x09\xa4name\xa4evil"          # 23 bytes, as written
    with FileReader(path) as reader:
        (a, b, _, _), (c, d, _, _) = reader.shard_set.locations.row(0, 0), reader.shard_set.locations.row(0, 1)
    assert (b - a, d - c) == (len(r0), len(r1))
    with open(path, "r+b") as f:
        f.seek(a)
        f.write(r0)
        f.seek(c)
        f.write(r1)
    with FileReader(path, verify=False) as reader:      # the decoder's refusal, not the checksums'
        with pytest.raises(FormatError, match="row 0: corrupt raw record"):
            reader[0]
        with pytest.raises(FormatError, match="row 0: corrupt raw record"):
            reader.read_batch([0, 1])
        with pytest.raises(FormatError, match="row 0: corrupt raw record"):
            reader.__getitems__([0, 1])
