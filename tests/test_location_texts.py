"""A block run's locations come from the ``.db`` as one text per column (``index.integer_columns``:
no Python object per row), and are exactly the rows a row-by-row fetch and the page-table walk give;
anything that is not a plain integer falls back to the row-by-row fetch and its errors."""

import sqlite3

import numpy as np
import pytest

import recordio
from recordio.errors import IndexFileError
from recordio.mindrecord import index

from recordio.mindrecord.read import location_sources
ROWS = 3_000                      # 2 shards of 1,500 rows: 6 blocks each, one run per shard


@pytest.fixture(autouse=True)
def db_locations(monkeypatch):
    """Locations from the ``.db`` (RECORDIO_LOCATIONS=db; a remote dataset's path): the `.db` fetch is tested
    here; a local reader walks the data file instead (tests/test_page_walk.py)."""
    monkeypatch.setenv("RECORDIO_LOCATIONS", "db")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("texts") / "rows.mindrecord")
    rng = np.random.default_rng(17)
    with recordio.FileWriter(path, shard_num=2) as writer:
        writer.add_schema({"id": {"type": "int64"}, "vec": {"type": "int32", "shape": [-1]},
                           "blob": {"type": "bytes"}}, "texts")
        writer.write_raw_data([{"id": i, "vec": rng.integers(-9, 9, i % 6, dtype=np.int32),
                                "blob": bytes([i % 251]) * (i % 9)} for i in range(ROWS)])
    return path + "0"


def sources(reader):
    return reader.shard_set.locations.sources


def batches(reader, order, size=128):
    return [reader.read_batch(order[s:s + size]) for s in range(0, len(order), size)]


def assert_same(got, want):
    for a, b in zip(got, want, strict=True):
        assert np.array_equal(a["id"], b["id"])
        assert [bytes(x) for x in a["blob"]] == [bytes(x) for x in b["blob"]]
        assert all(np.array_equal(x, y) for x, y in zip(a["vec"], b["vec"], strict=True))


@pytest.mark.parametrize("shuffled", [False, True], ids=["in-order", "shuffled"])
def test_every_query_of_a_first_epoch_is_answered_as_texts_with_the_walks_rows(dataset, shuffled):
    order = np.random.default_rng(4).permutation(ROWS) if shuffled else np.arange(ROWS)
    with recordio.FileReader(dataset) as reader, recordio.FileReader(dataset, use_index=False) as walk:
        got = batches(reader, order)
        assert all(s.queries > 0 and s.text_queries == s.queries for s in sources(reader))
        assert_same(got, batches(walk, order))


def test_the_texts_equal_the_row_by_row_fetch(dataset):
    conn = index.connect_ro(dataset + ".db")
    try:
        for lo, hi in [(0, 1), (0, ROWS // 2), (255, 700), (1_499, 1_500)]:
            rows = conn.execute(location_sources._SELECT, (lo, hi)).fetchall()
            got = index.integer_columns(conn, location_sources._SELECT, location_sources._COLUMNS, (lo, hi))
            assert got.dtype == np.int64 and np.array_equal(got, np.array(rows, dtype=np.int64))
    finally:
        conn.close()


@pytest.fixture
def table():
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE T(A INT, B INT)")
    conn.executemany("INSERT INTO T VALUES (?, ?)", [(i, -i * 7) for i in range(50)])
    yield conn
    conn.close()


def texts(conn, where="1"):
    return index.integer_columns(conn, f"SELECT A, B FROM T WHERE {where} ORDER BY A", ("A", "B"), ())


@pytest.mark.parametrize("value", [1.5, 1e30, None, "1 2", "1-2", "--3", "", "abc", b"\x00\xff", 2**62 * 1.0],
                         ids=repr)
def test_a_value_that_is_not_an_integer_is_left_to_the_row_by_row_fetch(table, value):
    assert np.array_equal(texts(table), np.array([(i, -i * 7) for i in range(50)]))
    table.execute("UPDATE T SET B = ? WHERE A = 20", (value,))
    table.execute("UPDATE T SET B = NULL WHERE A = 30")         # a NULL beside a '1 2' keeps the count
    assert texts(table) is None
    assert texts(table, "A < 20") is not None                   # the range without them is fine
    assert texts(table, "A > 99") is None                       # no rows: nothing to parse


@pytest.mark.parametrize("value, message", [("abc", "non-integer locations"),
                                            (1.5, "not where the page table places row 601")])
def test_a_db_with_a_non_integer_location_is_refused_as_the_row_by_row_fetch_refuses_it(dataset, tmp_path,
                                                                                       value, message):
    import shutil

    for suffix in ("0", "0.db", "1", "1.db"):
        shutil.copy(dataset[:-1] + suffix, tmp_path / f"rows.mindrecord{suffix}")
    copy = str(tmp_path / "rows.mindrecord0")
    conn = sqlite3.connect(copy + ".db")
    conn.execute("UPDATE INDEXES SET PAGE_OFFSET_BLOB_END = ? WHERE ROW_ID = 600", (value,))
    conn.commit()
    conn.close()
    with recordio.FileReader(copy) as reader:
        with pytest.raises(IndexFileError, match=message):
            reader.read_batch(np.arange(ROWS))


def test_rows_the_query_hands_back_out_of_order_are_put_in_row_order(dataset, monkeypatch):
    monkeypatch.setattr(location_sources, "_SELECT", location_sources._SELECT.replace("ORDER BY ROW_ID", "ORDER BY ROW_ID DESC"))
    order = np.arange(ROWS)
    with recordio.FileReader(dataset) as reader, recordio.FileReader(dataset, use_index=False) as walk:
        assert_same(batches(reader, order), batches(walk, order))
        assert all(s.text_queries == s.queries for s in sources(reader))
