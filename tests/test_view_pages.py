"""``recordio view``'s filtered pages (``Source.page_rows``, :mod:`recordio.view.pages`): every page equals
the slice of a brute-force list of the matching global rows (read from the data files, not the ``.db``),
whatever order pages were served in and whatever anchors they left; paging on, paging back and the last
page step over one page of matches, not ``offset`` (the SQL's OFFSET is counted)."""

import functools
import random

import pytest

import recordio
from recordio.view import db, pages
from recordio.view.source import MAX_PAGE, Source

ROWS, SHARDS = 1500, 4
WHERE = [["label=3"], ["label>=2", "split=val"], ["id<300"], ["id>=700", "label in 1,5"], ["label=99"],
         ["id>=1499"], []]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("pages") / "data.mindrecord")
    with recordio.FileWriter(path, SHARDS) as writer:
        writer.add_schema({"id": {"type": "int64"}, "label": {"type": "int32"}, "split": {"type": "string"},
                           "data": {"type": "bytes"}}, "filtered pages")
        writer.add_index(["id", "label", "split"])
        writer.write_raw_data([{"id": i, "label": (i * 7 + i // 50) % 9, "split": ["train", "val"][i % 5 == 1],
                                "data": bytes([i % 256])} for i in range(ROWS)])
    return path + "0"


@pytest.fixture(scope="module")
def values(dataset):
    """Every global row's indexed values, read from the data files."""
    with recordio.FileReader(dataset) as reader:
        assert len(reader.files) == SHARDS and min(reader.file_row_counts) > 0
        return [(int(r["id"]), int(r["label"]), r["split"]) for r in (reader[i] for i in range(len(reader)))]


def brute(values, where):
    tests = {"label=3": lambda i, lab, s: lab == 3, "label>=2": lambda i, lab, s: lab >= 2,
             "split=val": lambda i, lab, s: s == "val", "id<300": lambda i, lab, s: i < 300,
             "id>=700": lambda i, lab, s: i >= 700, "label in 1,5": lambda i, lab, s: lab in (1, 5),
             "label=99": lambda i, lab, s: lab == 99, "id>=1499": lambda i, lab, s: i >= 1499}
    return [g for g, v in enumerate(values) if all(tests[w](*v) for w in where)]


def pairs(count, seed):
    """(offset, limit) pairs in a random order: every page of 7 and of 50, the last pages, pages across
    the end, past it, empty ones, and random ones."""
    rng = random.Random(seed)
    out = [(o, 7) for o in range(0, count + 7, 7)] + [(o, 50) for o in range(0, count + 50, 50)]
    out += [(max(0, count - n), n) for n in (1, 7, 50, MAX_PAGE)] + [(count, 10), (count + 5, 10), (10**9, 50)]
    out += [(rng.randrange(count + 30), rng.choice([0, 1, 3, 50, MAX_PAGE, MAX_PAGE + 50])) for _ in range(120)]
    rng.shuffle(out)
    return out


@pytest.mark.parametrize("step", [pages.STEP, 3])
@pytest.mark.parametrize("where", WHERE, ids=lambda w: "&".join(w) or "all")
def test_every_page_is_the_slice_of_the_matches_in_any_order(dataset, values, where, step, monkeypatch):
    monkeypatch.setattr(pages, "STEP", step)          # 3: far pages walk there in hops, leaving anchors
    expected = brute(values, where)
    source = Source(dataset)
    try:
        conditions = source.conditions(where)
        assert source.count(conditions) == len(expected)
        if where and where[0] != "label=99":
            spread = 1 if where[0] in ("id<300", "id>=1499") else 3
            assert sum(1 for n in source.shard_counts(conditions) if n) >= spread
        for seed in (0, 1, 2):                       # the same source: the pages before left their anchors
            for offset, limit in pairs(len(expected), seed):
                got = source.page_rows(conditions, offset, limit)
                assert got == expected[offset:offset + min(limit, MAX_PAGE)], (where, seed, offset, limit)
    finally:
        source.close()


def test_few_kept_anchors_give_the_same_pages(dataset, values, monkeypatch):
    monkeypatch.setattr(pages, "Anchors", functools.partial(pages.Anchors, 2, 4))
    source = Source(dataset)
    try:
        for seed in range(3):
            for where in WHERE[:4]:
                expected, conditions = brute(values, where), source.conditions(where)
                for offset, limit in pairs(len(expected), seed)[:60]:
                    assert source.page_rows(conditions, offset, limit) == expected[offset:offset + min(limit, MAX_PAGE)]
    finally:
        source.close()


@pytest.fixture
def offsets(monkeypatch):
    """The OFFSET of every page query run (its last parameter)."""
    seen, query = [], db.query

    def counted(conn, path, sql, params=(), **kw):
        if "ROW_ID FROM INDEXES" in sql and "OFFSET" in sql:
            seen.append(params[-1])
        return query(conn, path, sql, params, **kw)

    monkeypatch.setattr(db, "query", counted)
    return seen


def test_paging_on_back_and_to_the_last_page_steps_over_no_matches(dataset, values, offsets):
    where = ["label>=2", "split=val"]
    expected = brute(values, where)
    source = Source(dataset)
    try:
        conditions = source.conditions(where)
        assert source.page_rows(conditions, len(expected) - 10, 10) == expected[-10:]      # the last page
        assert offsets == [0]
        offsets.clear()
        assert source.page_rows(conditions, 150, 10) == expected[150:160]                    # a far page, cold
        assert max(offsets) > 0
        for offset in range(160, len(expected), 10):                                                 # paging on
            offsets.clear()
            assert source.page_rows(conditions, offset, 10) == expected[offset:offset + 10]
            assert offsets and set(offsets) == {0}, offset
        for offset in range(140, 40, -10):                                                   # paging back
            offsets.clear()
            assert source.page_rows(conditions, offset, 10) == expected[offset:offset + 10]
            assert offsets and set(offsets) == {0}, offset
    finally:
        source.close()


def test_a_far_page_leaves_anchors_on_its_way_and_a_jump_near_them_is_cheap(dataset, values, offsets, monkeypatch):
    monkeypatch.setattr(pages, "STEP", 16)
    where = ["label>=2"]
    expected = brute(values, where)
    source = Source(dataset)
    try:
        conditions = source.conditions(where)
        shard0 = source.shard_counts(conditions)[0]
        assert shard0 > 200
        far = shard0 // 2 - 10                                       # read forwards, from the start
        assert source.page_rows(conditions, far, 5) == expected[far:far + 5]
        assert offsets.count(16) == far // 16 and max(offsets) <= 16  # hops of 16 matches, then the page
        for offset in (far // 3, far - 20, far // 2 + 7, 20, far - 40):  # each within 16 of an anchor
            offsets.clear()
            assert source.page_rows(conditions, offset, 5) == expected[offset:offset + 5]
            assert len(offsets) == 1 and offsets[0] < 16, (offset, offsets)
    finally:
        source.close()


def test_the_way_to_a_far_page_keeps_the_time_limit_of_a_query(dataset, monkeypatch):
    from recordio.errors import IndexFileError

    monkeypatch.setattr(pages, "STEP", 3)
    monkeypatch.setattr(db, "QUERY_SECONDS", 0.0)
    source = Source(dataset)
    try:
        conditions = source.conditions(["label>=2"])
        assert len(source.page_rows(conditions, 2, 5)) == 5                # near the start: no way to walk
        with pytest.raises(IndexFileError, match=r"data.mindrecord0.db: .*interrupted after 0 s.*the way to match 100"):
            source.page_rows(conditions, 100, 5)
    finally:
        source.close()


def test_anchors_stay_sorted_and_bounded():
    anchors = pages.Anchors(filters=2, per_shard=8)
    marks = anchors.of(("a",), 0)
    rng = random.Random(0)
    for n in rng.sample(range(1000), 100):
        marks.add((n, n * 3))
        assert len(marks) <= 8 and marks == sorted(marks) and len({m[0] for m in marks}) == len(marks)
    assert anchors.of(("a",), 0) is marks
    anchors.of(("b",), 0)
    anchors.of(("c",), 1)
    assert anchors.of(("a",), 0) == []                   # least recently used filter dropped


@pytest.mark.parametrize("start, stop, want", [(0, 10, (False, 0, None)), (90, 100, (True, 100, None)),
                                               (41, 45, (False, 40, 7)), (52, 58, (True, 60, 9)),
                                               (40, 60, (False, 40, 7))])
def test_plan_reads_from_the_nearest_anchor(start, stop, want):
    assert pages.plan([(40, 7), (60, 9)], 100, start, stop) == want


def test_threads_paging_one_filter_at_once_get_the_matches(dataset, values, monkeypatch):
    """Four threads share one Source's anchors and connections (without page_rows' lock this was seen
    to hang in SQLite)."""
    import concurrent.futures

    monkeypatch.setattr(pages, "STEP", 7)
    where = ["label>=2"]
    expected = brute(values, where)
    source = Source(dataset)
    try:
        conditions = source.conditions(where)

        def pages_of(seed):
            return [(o, n, source.page_rows(conditions, o, n)) for o, n in pairs(len(expected), seed)[:80]]

        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            for served in pool.map(pages_of, range(8)):
                for offset, limit, got in served:
                    assert got == expected[offset:offset + min(limit, MAX_PAGE)], (offset, limit)
    finally:
        source.close()
