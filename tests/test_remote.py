"""Datasets behind URLs: S3 (moto's server) and HTTP (a standard-library range server), on 127.0.0.1.

Reads through ``s3://`` and ``http://`` equal local reads; counting fetches no data page; verify
finds a flipped byte; faults are retried; a changed object is refused; processes sharing one cache
fetch each block once; local paths never load fsspec.
"""

import contextlib
import glob
import json
import multiprocessing
import os
import pickle
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("fsspec")
pytest.importorskip("s3fs")
pytest.importorskip("moto")

import recordio
from recordio import FileReader, FileWriter
from recordio.errors import DatasetChangedError, MissingFileError
from conftest import GOLDEN_COPIES, child_pythonpath
from recordio.tools.remote_servers import FaultProxy, RangeServer, blob_rows, moto_server, write_blob_rows
from rowcheck import assert_rows_equal

CASES = sorted(p.name for p in GOLDEN_COPIES.iterdir() if p.is_dir())
_RANGE = re.compile(r"bytes=(\d+)-(\d+)")


def _data_files(folder):
    return sorted(os.path.basename(f) for f in glob.glob(os.path.join(folder, "*.mindrecord*"))
                  if not f.endswith(".db"))


def _expected(case):
    with open(GOLDEN_COPIES / case / "expected.pkl", "rb") as f:
        return pickle.load(f)


def write_blobs(path, n=300, shard_num=2, seed=0):
    """A dataset of ``n`` rows with ~3 KB blobs over many 32 KiB pages; returns (first file, rows)."""
    os.makedirs(os.path.dirname(str(path)), exist_ok=True)
    rows = blob_rows(n, seed)
    write_blob_rows(str(path), rows, shard_num)
    return str(path) + ("0" if shard_num > 1 else ""), rows


def _spans(log, name):
    """(start, end) of each ranged GET of the object ``name`` in a server log."""
    out = []
    for method, path, rng in log:
        if method == "GET" and path.rsplit("/", 1)[-1] == name:
            m = _RANGE.match(rng or "")
            assert m, f"a GET of {name} without a range: {rng!r}"
            out.append((int(m.group(1)), int(m.group(2)) + 1))
    return out


@pytest.fixture(autouse=True)
def _cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("RECORDIO_CACHE_DIR", str(tmp_path / "default-cache"))      # staging of URL writes too


@pytest.fixture(scope="module")
def s3():
    with moto_server() as server:
        fs = server.bucket("golden")
        for case in CASES:
            for f in os.listdir(GOLDEN_COPIES / case):
                if ".mindrecord" in f:
                    fs.put_file(str(GOLDEN_COPIES / case / f), f"golden/{case}/{f}")
        yield server


@pytest.fixture(scope="module")
def http_golden():
    with RangeServer(GOLDEN_COPIES) as server:
        yield server


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("scheme", ["s3", "http"])
def test_golden_read_through_url_equals_local(case, scheme, s3, http_golden, tmp_path):
    files = _data_files(GOLDEN_COPIES / case)
    base = f"s3://golden/{case}" if scheme == "s3" else f"{http_golden.url}/{case}"
    opts = s3.options if scheme == "s3" else None
    expected = _expected(case)
    with FileReader(os.path.join(GOLDEN_COPIES, case, files[0])) as local:
        assert_rows_equal(list(local), expected)
    for source in (f"{base}/{files[-1]}", [f"{base}/{f}" for f in files]):
        with FileReader(source, storage_options=opts, cache_dir=tmp_path / "cache") as reader:
            assert len(reader) == len(expected)
            assert_rows_equal(list(reader), expected)
            assert_rows_equal(reader.__getitems__(list(range(len(reader)))[::-1]), expected[::-1])
    assert recordio.count_rows(f"{base}/{files[0]}", storage_options=opts, cache_dir=tmp_path / "c2") == len(expected)
    info = recordio.describe(f"{base}/{files[0]}", storage_options=opts, cache_dir=tmp_path / "c2")
    assert info["rows"] == len(expected) and all(s["file"].startswith(base) for s in info["shards"])


def test_count_fetches_no_data_page(tmp_path):
    first, rows = write_blobs(tmp_path / "ds" / "blobs.mindrecord")
    header_size = recordio.describe(first)["header_size"]
    with RangeServer(tmp_path / "ds") as server:
        assert recordio.count_rows(f"{server.url}/blobs.mindrecord0", cache_dir=tmp_path / "cache") == len(rows)
        for name in _data_files(tmp_path / "ds"):
            spans = _spans(server.log, name)
            assert spans, f"{name}: its header was not fetched"
            assert all(end <= header_size for _, end in spans), f"{name}: a data page was fetched: {spans}"
        # reading a row does fetch its pages (the check above can fail)
        with FileReader(f"{server.url}/blobs.mindrecord0", cache_dir=tmp_path / "cache") as reader:
            assert reader[len(rows) - 1]["data"] == rows[-1]["data"]
        assert any(end > header_size for name in _data_files(tmp_path / "ds") for _, end in _spans(server.log, name))


def _write_labelled(folder, n=120):
    """Two shards of ``n`` rows with an indexed ``label`` (row % 7) and a 2 KB blob; returns the first file."""
    os.makedirs(folder, exist_ok=True)
    with FileWriter(os.path.join(folder, "lab.mindrecord"), shard_num=2) as writer:
        writer.add_schema({"label": {"type": "int32"}, "data": {"type": "bytes"}})
        writer.add_index(["label"])
        writer.write_raw_data([{"label": i % 7, "data": bytes([i % 251]) * 2048} for i in range(n)])
    return os.path.join(folder, "lab.mindrecord0")


@pytest.mark.parametrize("scheme", ["s3", "http"])
def test_count_where_at_a_url_reads_the_fetched_index_and_no_data_page(scheme, s3, tmp_path, capsys, monkeypatch):
    """``count_where`` and ``recordio count --where`` at a URL count from the cached ``.db`` files, as
    ``count_rows`` does, and fetch no data page."""
    from recordio.mindrecord.read.description import count_where
    from recordio.tools.__main__ import main

    first = _write_labelled(str(tmp_path / "ds"))
    header_size = recordio.describe(first)["header_size"]
    assert count_where(first, [("label", "3")]) == sum(i % 7 == 3 for i in range(120)) == 17
    monkeypatch.setenv("RECORDIO_CACHE_DIR", str(tmp_path / "cli-cache"))
    with contextlib.ExitStack() as stack:
        if scheme == "s3":
            fs = s3.bucket("where")
            for f in os.listdir(tmp_path / "ds"):
                fs.put_file(str(tmp_path / "ds" / f), f"where/{f}")
            url, opts = "s3://where/lab.mindrecord0", s3.options
        else:
            server = stack.enter_context(RangeServer(tmp_path / "ds"))
            url, opts = f"{server.url}/lab.mindrecord0", None
        got = count_where(url, [("label", "3")], storage_options=opts, cache_dir=tmp_path / "cache")
        assert got == 17
        assert count_where([url[:-1] + "1"], [("label", "6")], storage_options=opts,
                           cache_dir=tmp_path / "cache") == sum(i % 7 == 6 for i in range(60, 120))
        if scheme == "http":
            assert main(["count", "--where", "label=3", url]) == 0 and capsys.readouterr().out.strip() == "17"
            for name in _data_files(tmp_path / "ds"):
                assert all(end <= header_size for _, end in _spans(server.log, name)), name
    with pytest.raises(ValueError, match="not an indexed field"):
        count_where(url, [("data", "x")], storage_options=opts, cache_dir=tmp_path / "cache")


@pytest.mark.slow
def test_verify_finds_a_flipped_byte_in_a_remote_object(s3, tmp_path):
    first, rows = write_blobs(tmp_path / "ds" / "blobs.mindrecord")
    fs = s3.bucket("flip")
    for f in os.listdir(tmp_path / "ds"):
        fs.put_file(str(tmp_path / "ds" / f), f"flip/{f}")
    url = "s3://flip/blobs.mindrecord0"
    assert recordio.verify(url, storage_options=s3.options, cache_dir=tmp_path / "cache").ok
    data = bytearray((tmp_path / "ds" / "blobs.mindrecord1").read_bytes())
    offset = recordio.describe(first)["header_size"] + 1000          # inside the first page
    data[offset] ^= 0x40
    fs.pipe_file("flip/blobs.mindrecord1", bytes(data))
    report = recordio.verify(url, storage_options=s3.options, cache_dir=tmp_path / "cache")
    assert not report.ok
    assert any(f == "s3://flip/blobs.mindrecord1" and "checksum" in text for f, text in report.problems), report
    from recordio.errors import ChecksumError

    with FileReader("s3://flip/blobs.mindrecord1", storage_options=s3.options, cache_dir=tmp_path / "c2",
                    verify=True) as reader:
        with pytest.raises(ChecksumError, match=r"s3://flip/blobs\.mindrecord1 bytes \d+\.\.\d+: page 0"):
            reader[reader.file_row_counts[0]]                          # the first row of shard 1
    with FileReader(url, storage_options=s3.options, cache_dir=tmp_path / "c2", verify=True) as reader:
        assert reader[0]["data"] == rows[0]["data"]                 # shard 0 is intact


@pytest.mark.slow
def test_faults_on_10_percent_of_requests_still_read_every_row(tmp_path):
    first, rows = write_blobs(tmp_path / "ds" / "blobs.mindrecord", n=200)
    with RangeServer(tmp_path / "ds") as server, FaultProxy(server, fault_rate=0.1, seed=3) as proxy:
        with FileReader(f"{proxy.url}/blobs.mindrecord0", cache_dir=tmp_path / "cache") as reader:
            got = reader.__getitems__(np.random.default_rng(1).permutation(len(rows)))
            stats = reader.shard_set.storage.stats
        order = np.random.default_rng(1).permutation(len(rows))
        assert [r["data"] for r in got] == [rows[i]["data"] for i in order]
        assert len(proxy.faults) >= 5 and {"500", "drop", "truncate"} <= set(proxy.faults)
        # every 500 and cut body is retried by recordio (aiohttp itself retries some dropped connections)
        assert proxy.faults.count("500") + proxy.faults.count("truncate") <= stats["retries"] <= len(proxy.faults)


@pytest.mark.slow
@pytest.mark.parametrize("scheme", ["s3", "http"])
def test_a_changed_object_is_refused_naming_it(scheme, s3, tmp_path):
    first, rows = write_blobs(tmp_path / "ds" / "blobs.mindrecord", shard_num=1)
    changed = bytearray((tmp_path / "ds" / "blobs.mindrecord").read_bytes())
    changed[-100] ^= 0xFF                                   # same size, other bytes
    if scheme == "s3":
        fs = s3.bucket(f"changed-{scheme}")
        for f in os.listdir(tmp_path / "ds"):
            fs.put_file(str(tmp_path / "ds" / f), f"changed-{scheme}/{f}")
        url, opts = f"s3://changed-{scheme}/blobs.mindrecord", s3.options
        replace = lambda: fs.pipe_file(f"changed-{scheme}/blobs.mindrecord", bytes(changed))   # noqa: E731
        server = None
    else:
        server = RangeServer(tmp_path / "ds")
        url, opts = f"{server.url}/blobs.mindrecord", None

        def replace():
            tmp = tmp_path / "ds" / "new"
            tmp.write_bytes(changed)
            os.replace(tmp, tmp_path / "ds" / "blobs.mindrecord")
    try:
        with FileReader(url, storage_options=opts, cache_dir=tmp_path / "cache") as reader:
            assert reader[0]["data"] == rows[0]["data"]
            replace()
            with pytest.raises(DatasetChangedError, match=re.escape(url)):
                reader[len(rows) - 1]
        # a new reader sees the new object, from a fresh cache entry
        with FileReader(url, storage_options=opts, cache_dir=tmp_path / "cache") as reader:
            assert reader[0]["data"] == rows[0]["data"]
    finally:
        if server is not None:
            server.close()


def _read_all(url, cache, out):
    with FileReader(url, cache_dir=cache) as reader:
        rows = reader.__getitems__(np.random.default_rng(os.getpid()).permutation(len(reader)))
    out.put(sorted(int(r["id"]) for r in rows))


@pytest.mark.slow
def test_two_processes_sharing_a_cache_fetch_each_block_once(tmp_path):
    first, rows = write_blobs(tmp_path / "ds" / "blobs.mindrecord", n=400)
    ctx = multiprocessing.get_context("spawn")
    with RangeServer(tmp_path / "ds") as server:
        out = ctx.Queue()
        procs = [ctx.Process(target=_read_all, args=(f"{server.url}/blobs.mindrecord0", str(tmp_path / "cache"), out))
                 for _ in range(2)]
        for p in procs:
            p.start()
        results = [out.get(timeout=120) for _ in procs]
        for p in procs:
            p.join(30)
            assert p.exitcode == 0
        assert results == [list(range(len(rows)))] * 2
        for name in _data_files(tmp_path / "ds") + [n + ".db" for n in _data_files(tmp_path / "ds")]:
            spans = sorted(_spans(server.log, name))
            assert spans
            for (a, b), (c, d) in zip(spans, spans[1:]):
                assert b <= c, f"{name}: bytes {c}..{min(b, d) - 1} were fetched twice: {spans}"


def test_a_local_path_never_loads_fsspec(tmp_path):
    first, _ = write_blobs(tmp_path / "blobs.mindrecord", n=20)
    code = ("import sys, recordio; r = recordio.FileReader(sys.argv[1]); list(r); recordio.count_rows(sys.argv[1]); "
            "recordio.describe(sys.argv[1]); assert recordio.verify(sys.argv[1]).ok; "
            "bad = [m for m in ('fsspec', 's3fs', 'aiohttp', 'botocore') if m in sys.modules]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code, first], check=True, cwd=tmp_path)


def _epoch(reader, order, plan=True):
    if plan:
        reader.prefetch(order, depth=16, workers=4)
    return [reader[int(i)]["data"] for i in order]


def test_mind_dataset_over_a_url_gives_the_local_order(tmp_path):
    first, rows = write_blobs(tmp_path / "ds" / "blobs.mindrecord", n=120)
    with RangeServer(tmp_path / "ds") as server:
        for shuffle in (False, True):
            local = recordio.MindDataset(first, shuffle=shuffle)
            remote = recordio.MindDataset(f"{server.url}/blobs.mindrecord0", shuffle=shuffle,
                                          cache_dir=str(tmp_path / "cache"))
            got = [(int(r["id"]), bytes(r["data"])) for r in remote.create_dict_iterator(num_epochs=1, output_numpy=True)]
            want = [(int(r["id"]), bytes(r["data"])) for r in local.create_dict_iterator(num_epochs=1, output_numpy=True)]
            assert got == want and sorted(i for i, _ in got) == list(range(len(rows)))
            assert all(bytes(d) == rows[i]["data"] for i, d in got)


@pytest.mark.slow
def test_prefetch_hides_latency(tmp_path):
    import time

    first, rows = write_blobs(tmp_path / "ds" / "blobs.mindrecord", n=120)
    order = np.random.default_rng(5).permutation(len(rows))
    with RangeServer(tmp_path / "ds") as server, FaultProxy(server, latency_s=0.02) as proxy:
        times = {}
        for plan in (False, True):
            with FileReader(f"{proxy.url}/blobs.mindrecord0", cache_dir=tmp_path / f"cache{plan}") as reader:
                t0 = time.perf_counter()
                got = _epoch(reader, order, plan)
                times[plan] = time.perf_counter() - t0
            assert got == [rows[i]["data"] for i in order]
    assert times[True] < 0.5 * times[False], times


@pytest.mark.slow
def test_a_cache_as_large_as_the_dataset_fetches_nothing_the_second_epoch(tmp_path):
    first, rows = write_blobs(tmp_path / "ds" / "blobs.mindrecord", n=150)
    size = 2 * sum(len(r["data"]) for r in rows)            # the blocks of every row, with room to spare
    rng = np.random.default_rng(0)
    with RangeServer(tmp_path / "ds") as server:
        with FileReader(f"{server.url}/blobs.mindrecord0", cache_dir=tmp_path / "cache", cache_limit=size) as reader:
            _epoch(reader, rng.permutation(len(rows)))
            before = reader.shard_set.storage.stats["bytes"]
            assert before > 0
            assert _epoch(reader, rng.permutation(len(rows))) is not None
            assert reader.shard_set.storage.stats["bytes"] == before


@pytest.mark.slow
def test_eviction_by_the_epoch_order_fetches_less_than_lru(tmp_path):
    first, rows = write_blobs(tmp_path / "ds" / "blobs.mindrecord", n=200)
    size = sum(len(r["data"]) for r in rows)
    fetched = {}
    with RangeServer(tmp_path / "ds") as server:
        for policy in ("future", "lru"):
            rng = np.random.default_rng(0)
            with FileReader(f"{server.url}/blobs.mindrecord0", cache_dir=tmp_path / policy,
                            cache_limit=size // 4) as reader:
                reader.shard_set.storage._bound.policy = policy
                for _ in range(3):
                    order = rng.permutation(len(rows))
                    assert _epoch(reader, order) == [rows[i]["data"] for i in order]
                fetched[policy] = reader.shard_set.storage.stats["bytes"]
    assert fetched["future"] < 0.9 * fetched["lru"], fetched


def _write_child(url, options, marker, staging):
    child = os.path.join(os.path.dirname(__file__), "upload_child.py")
    return subprocess.Popen([sys.executable, child, url, json.dumps(options), marker, staging])


@pytest.mark.slow
def test_a_write_killed_during_its_upload_leaves_nothing_that_opens_and_a_rerun_completes_it(s3, tmp_path):
    import signal
    import time

    s3.bucket("upload")
    url, opts = "s3://upload/ds/blobs.mindrecord", s3.options
    rows = blob_rows(300)
    write_blob_rows(url, rows[:50], 4, storage_options=opts)        # an older version, with one shard more
    assert recordio.count_rows(url + "0", storage_options=opts, cache_dir=tmp_path / "c0") == 50
    marker = tmp_path / "uploaded"
    child = _write_child(url, opts, str(marker), str(tmp_path / "staging"))
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert child.poll() is None and time.monotonic() < deadline, "the writer ended before its upload"
        time.sleep(0.05)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert len(marker.read_text().split()) == 2
    for first in (url + "0", url + "1"):
        with pytest.raises(MissingFileError, match="blobs.mindrecord0.db"):
            FileReader(first, storage_options=opts, cache_dir=tmp_path / "c1")
        with pytest.raises(MissingFileError):
            recordio.count_rows(first, storage_options=opts, cache_dir=tmp_path / "c1")
    rerun = _write_child(url, opts, "-", str(tmp_path / "staging"))
    assert rerun.wait(120) == 0
    with FileReader(url + "0", storage_options=opts, cache_dir=tmp_path / "c2") as reader:
        assert reader.files[-1].endswith("blobs.mindrecord2")
        assert [r["data"] for r in reader] == [r["data"] for r in rows]
    names = sorted(s3.bucket_fs().ls("upload/ds", detail=False))
    assert names == sorted(f"upload/ds/blobs.mindrecord{i}{db}" for i in range(3) for db in ("", ".db"))


def test_writing_to_a_url_that_holds_a_dataset_needs_overwrite(s3, tmp_path):
    s3.bucket("exists")
    write_blob_rows("s3://exists/a.mindrecord", blob_rows(5), 1, storage_options=s3.options)
    from recordio.errors import DatasetExistsError

    with pytest.raises(DatasetExistsError, match="s3://exists/a.mindrecord"):
        FileWriter("s3://exists/a.mindrecord", storage_options=s3.options)


@pytest.mark.slow
def test_the_commands_take_a_url_and_cache_shows_and_clears(tmp_path, capsys, monkeypatch):
    from recordio.tools.__main__ import main

    first, rows = write_blobs(tmp_path / "ds" / "blobs.mindrecord", n=40)
    cache = tmp_path / "cli-cache"
    monkeypatch.setenv("RECORDIO_CACHE_DIR", str(cache))
    with RangeServer(tmp_path / "ds") as server:
        url = f"{server.url}/blobs.mindrecord0"
        assert main(["count", url]) == 0 and capsys.readouterr().out.strip() == str(len(rows))
        assert main(["info", url]) == 0 and url in capsys.readouterr().out
        assert main(["head", url, "-n", "2", "--json"]) == 0
        assert capsys.readouterr().out.count('"id":') == 2
        assert main(["verify", url]) == 0 and "OK" in capsys.readouterr().out
    assert main(["cache", "--json"]) == 0
    entries = json.loads(capsys.readouterr().out)
    assert {e["url"] for e in entries} >= {url, url + ".db"}
    assert all(0 < e["cached_bytes"] <= e["size"] for e in entries)
    assert main(["cache", "--clear"]) == 0 and main(["cache", "--json"]) == 0
    assert json.loads(capsys.readouterr().out.split("\n", 1)[1]) == []


@pytest.mark.slow
def test_s3_through_a_faulty_proxy_reads_every_row(s3, tmp_path):
    first, rows = write_blobs(tmp_path / "ds" / "blobs.mindrecord", n=150)
    fs = s3.bucket("faulty")
    for f in os.listdir(tmp_path / "ds"):
        fs.put_file(str(tmp_path / "ds" / f), f"faulty/{f}")
    with FaultProxy(s3.address, fault_rate=0.1, seed=7) as proxy:
        opts = dict(s3.options_for(proxy.url), config_kwargs={"retries": {"max_attempts": 1}})
        with FileReader("s3://faulty/blobs.mindrecord0", storage_options=opts, cache_dir=tmp_path / "cache") as reader:
            order = np.random.default_rng(2).permutation(len(rows))
            assert [r["data"] for r in reader.__getitems__(order)] == [rows[i]["data"] for i in order]
        assert len(proxy.faults) >= 3


def _blocks_of(first, ids):
    """``(file name, 4 KiB block)`` a node reading rows ``ids`` may fetch: their raw records and blobs,
    each file's first 16 KiB (the header), and its RAW pages (fetched whole when small)."""
    from recordio.mindrecord.format import RAW, page_offset

    out = set()
    with FileReader(first) as reader:
        shard, _, locs = reader.shard_set.locations.bulk(np.asarray(ids))
        names = [os.path.basename(s.path) for s in reader.shard_set.shards]
        for k, (rs, re_, bs, be) in zip(shard.tolist(), locs.tolist()):
            out |= {(names[k], b) for a, e in ((rs, re_), (bs, be)) for b in range(a // 4096, (e + 4095) // 4096)}
        for s, name in zip(reader.shard_set.shards, names):
            out |= {(name, b) for b in range(4)}
            for p in (p for p in s.pages if p.kind == RAW):
                a = page_offset(s.header["header_size"], s.header["page_size"], p.page_id)
                out |= {(name, b) for b in range(a // 4096, (a + p.size + 4095) // 4096)}
    return out


def _rank_rows(url, cache, rank, world, out):
    data = recordio.MindDataset(url, shuffle=True, num_shards=world, shard_id=rank, cache_dir=cache)
    out.put((rank, [int(r["id"]) for r in data.create_dict_iterator(num_epochs=1, output_numpy=True)]))


@pytest.mark.slow
def test_two_nodes_of_two_processes_read_each_row_once_and_each_node_fetches_a_block_once(tmp_path):
    first, rows = write_blobs(tmp_path / "ds" / "blobs.mindrecord", n=400)
    ctx = multiprocessing.get_context("spawn")
    servers = [RangeServer(tmp_path / "ds"), RangeServer(tmp_path / "ds")]      # one per "node": its own log
    try:
        out = ctx.Queue()
        procs = [ctx.Process(target=_rank_rows, args=(f"{servers[node].url}/blobs.mindrecord0",
                                                      str(tmp_path / f"node{node}"), 2 * node + local, 4, out))
                 for node in range(2) for local in range(2)]
        for p in procs:
            p.start()
        got = dict(out.get(timeout=180) for _ in procs)
        for p in procs:
            p.join(30)
            assert p.exitcode == 0
        assert sorted(i for ids in got.values() for i in ids) == list(range(len(rows)))      # every row once
        for node, server in enumerate(servers):
            needed = _blocks_of(first, [i for r in (2 * node, 2 * node + 1) for i in got[r]])
            other = _blocks_of(first, [i for r in (2 - 2 * node, 3 - 2 * node) for i in got[r]])
            fetched = set()
            for name in _data_files(tmp_path / "ds"):
                spans = sorted(_spans(server.log, name))
                for (a, b), (c, d) in zip(spans, spans[1:]):
                    assert b <= c, f"node {node}: {name}: bytes {c}..{min(b, d) - 1} fetched twice"
                fetched |= {(name, k) for a, b in spans for k in range(a // 4096, (b + 4095) // 4096)}
            # the spans bridge small gaps between a node's rows: at most 2% more blocks than its rows need
            assert len(fetched - needed) <= 0.02 * len(needed), f"node {node} fetched {len(fetched - needed)} " \
                f"blocks no row of its own needs, of {len(needed)}: {sorted(fetched - needed)[:5]}"
            assert len(other - needed) > 0.3 * len(other)        # the other node's rows are mostly elsewhere
    finally:
        for s in servers:
            s.close()


@pytest.mark.slow
def test_a_reader_of_a_url_pickles_and_reads_in_another_process(tmp_path):
    first, rows = write_blobs(tmp_path / "ds" / "blobs.mindrecord", n=60)
    with RangeServer(tmp_path / "ds") as server:
        reader = FileReader(f"{server.url}/blobs.mindrecord0", cache_dir=tmp_path / "cache")
        assert reader[0]["data"] == rows[0]["data"]
        ctx = multiprocessing.get_context("spawn")
        with ctx.Pool(1) as pool:
            got = pool.apply(_all_data, (reader,))
        reader.close()
        assert got == [r["data"] for r in rows]


def _all_data(reader):
    return [r["data"] for r in reader]


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
def test_read_batch_and_element_counts_through_a_url_equal_local(case, http_golden, tmp_path):
    """The columnar reads and the element-count scan go through the cache too (never a hole of the map)."""
    from rowcheck import values_equal

    files = _data_files(GOLDEN_COPIES / case)
    local = str(GOLDEN_COPIES / case / files[0])
    url = f"{http_golden.url}/{case}/{files[0]}"
    with FileReader(local) as a, FileReader(url, cache_dir=tmp_path / "cache") as b:
        order = np.random.default_rng(0).permutation(len(a))
        want, got = a.read_batch(order), b.read_batch(order)
        assert list(got) == list(want)
        for name in want:
            x, y = want[name], got[name]
            x = x.tolist() if hasattr(x, "tolist") else x
            y = y.tolist() if hasattr(y, "tolist") else y
            assert all(values_equal(p, q) for p, q in zip(x, y)) and len(x) == len(y), name
    assert recordio.count_elements(url, cache_dir=tmp_path / "c2") == recordio.count_elements(local)


@pytest.mark.slow
def test_read_batch_under_a_tight_cache_limit_reads_every_row(tmp_path):
    """A batch larger than the cache: each row's bytes are read under the cache's lock, one at a time."""
    first, rows = write_blobs(tmp_path / "ds" / "blobs.mindrecord", n=120)
    with RangeServer(tmp_path / "ds") as server:
        with FileReader(f"{server.url}/blobs.mindrecord0", cache_dir=tmp_path / "cache",
                        cache_limit=16 * 4096) as reader:
            order = np.random.default_rng(1).permutation(len(rows))
            got = reader.read_batch(order, columns=["data"])["data"]
            assert [bytes(v) for v in got.tolist()] == [rows[i]["data"] for i in order]


def _row_blocks(first, ids):
    """Bytes of the 4 KiB blocks the rows ``ids`` need (raw records and blobs), over all files, with the
    files' RAW pages (fetched whole when small)."""
    from recordio.mindrecord.format import RAW, page_offset

    with FileReader(first) as reader:
        shard, _, locs = reader.shard_set.locations.bulk(np.asarray(ids))
        blocks = {(k, b) for k, (rs, re_, bs, be) in zip(shard.tolist(), locs.tolist())
                  for a, e in ((rs, re_), (bs, be)) for b in range(a // 4096, (e + 4095) // 4096)}
        for k, s in enumerate(reader.shard_set.shards):
            for p in (p for p in s.pages if p.kind == RAW):
                a = page_offset(s.header["header_size"], s.header["page_size"], p.page_id)
                blocks |= {(k, b) for b in range(a // 4096, (a + p.size + 4095) // 4096)}
    return 4096 * len(blocks)


@pytest.mark.slow
def test_a_shuffled_epoch_fetches_in_few_large_requests(tmp_path):
    """A planned epoch fetches spans, not rows: a handful of requests for 600 rows (one per row before)."""
    first, rows = write_blobs(tmp_path / "ds" / "blobs.mindrecord", n=600)
    order = np.random.default_rng(2).permutation(len(rows))
    with RangeServer(tmp_path / "ds") as server:
        with FileReader(f"{server.url}/blobs.mindrecord0", cache_dir=tmp_path / "cache") as reader:
            before = dict(reader.shard_set.storage.stats)
            assert _epoch(reader, order) == [rows[i]["data"] for i in order]
            requests = reader.shard_set.storage.stats["requests"] - before["requests"]
            fetched = reader.shard_set.storage.stats["bytes"] - before["bytes"]
        # two files of about 1 MiB: their pages in at most 4 MiB spans, plus a row read before its span
        assert requests <= 12, f"{requests} requests for {len(rows)} rows"
        assert fetched <= 1.05 * _row_blocks(first, order), (fetched, _row_blocks(first, order))
        # without a plan each row is fetched on its own
        with FileReader(f"{server.url}/blobs.mindrecord0", cache_dir=tmp_path / "c2") as reader:
            before = reader.shard_set.storage.stats["requests"]
            _epoch(reader, order[:100], plan=False)
            assert reader.shard_set.storage.stats["requests"] - before >= 90


def _rank_stats(url, cache, rank, world, out):
    data = recordio.MindDataset(url, shuffle=True, num_shards=world, shard_id=rank, cache_dir=cache)
    ids = [int(r["id"]) for r in data.create_dict_iterator(num_epochs=1, output_numpy=True)]
    stats = data.reader.shard_set.storage.stats
    out.put((rank, ids, stats["requests"], stats["bytes"]))


@pytest.mark.slow
def test_a_sharded_reader_fetches_about_the_bytes_of_its_own_rows(tmp_path):
    first, rows = write_blobs(tmp_path / "ds" / "blobs.mindrecord", n=800)
    ctx = multiprocessing.get_context("spawn")
    with RangeServer(tmp_path / "ds") as server:
        out = ctx.Queue()
        proc = ctx.Process(target=_rank_stats, args=(f"{server.url}/blobs.mindrecord0", str(tmp_path / "cache"),
                                                     1, 4, out))
        proc.start()
        rank, ids, requests, _ = out.get(timeout=120)
        proc.join(30)
        spans = [span for name in _data_files(tmp_path / "ds") for span in _spans(server.log, name)]
    assert len(ids) == len(rows) // 4 and len(set(ids)) == len(ids)
    needed = _row_blocks(first, ids)
    fetched = sum(b - a for a, b in spans if a >= 1 << 14)          # past each file's header, read at open
    assert needed <= fetched <= 1.05 * needed, (fetched, needed)
    assert requests < 0.8 * len(ids), requests          # rows of one page sharing a span


@pytest.mark.slow
def test_a_cache_limit_fetches_each_needed_block_once_in_an_epoch(tmp_path):
    """Spans under a bound hold rows due soon: nothing is evicted before it is read (rows of ~40 KB, so
    that few blocks are shared by two rows that the epoch reads far apart)."""
    rng = np.random.default_rng(6)
    rows = [{"id": np.int64(i), "label": np.int32(i % 7),
             "data": rng.integers(0, 256, int(rng.integers(30_000, 50_000)), dtype=np.uint8).tobytes()}
            for i in range(160)]
    os.makedirs(tmp_path / "ds")
    with FileWriter(str(tmp_path / "ds" / "blobs.mindrecord"), shard_num=2) as w:
        w.set_page_size(1 << 18)
        w.add_schema({"id": {"type": "int64"}, "label": {"type": "int32"}, "data": {"type": "bytes"}}, "blobs")
        w.write_raw_data(rows)
    first = str(tmp_path / "ds" / "blobs.mindrecord0")
    order = np.random.default_rng(4).permutation(len(rows))
    needed = _row_blocks(first, order)
    with RangeServer(tmp_path / "ds") as server:
        with FileReader(f"{server.url}/blobs.mindrecord0", cache_dir=tmp_path / "cache",
                        cache_limit=needed // 4) as reader:
            before = dict(reader.shard_set.storage.stats)
            assert _epoch(reader, order) == [rows[i]["data"] for i in order]
            fetched = reader.shard_set.storage.stats["bytes"] - before["bytes"]
    assert needed <= fetched <= 1.1 * needed, (fetched, needed)


@pytest.mark.slow
def test_a_corrupt_object_fails_an_ordinary_read_naming_the_url_and_bytes(s3, tmp_path):
    """Pages are checked as they land whole in the cache (an epoch's spans cover them), without verify=True;
    the bad bytes are never served."""
    from recordio.errors import ChecksumError

    first, rows = write_blobs(tmp_path / "ds" / "blobs.mindrecord", n=200)
    fs = s3.bucket("corrupt")
    data = bytearray((tmp_path / "ds" / "blobs.mindrecord1").read_bytes())
    data[recordio.describe(first)["header_size"] + 5000] ^= 0x01        # inside page 0 of shard 1
    for f in os.listdir(tmp_path / "ds"):
        fs.put_file(str(tmp_path / "ds" / f), f"corrupt/{f}")
    fs.pipe_file("corrupt/blobs.mindrecord1", bytes(data))
    url = "s3://corrupt/blobs.mindrecord0"
    pattern = r"s3://corrupt/blobs\.mindrecord1 bytes \d+\.\.\d+: page 0 \(rows 0\.\.\d+\) does not match its checksum"
    for attempt in range(2):                 # the second reader finds nothing of the bad page in the cache
        with FileReader(url, storage_options=s3.options, cache_dir=tmp_path / "cache") as reader:
            assert reader[0]["data"] == rows[0]["data"]                 # shard 0 is intact
            with pytest.raises(ChecksumError, match=pattern):
                _epoch(reader, np.random.default_rng(attempt).permutation(len(rows)))


@pytest.mark.slow
def test_a_torchrun_job_of_two_ranks_reads_s3_through_one_node_cache(s3, tmp_path):
    """A real ``torchrun --nproc_per_node=2`` job (gloo, CPU) over moto's S3 server: the ranks split the
    rows from torch.distributed, and sharing one cache folder they fetch about the rows' bytes once."""
    pytest.importorskip("torch.distributed")
    first, rows = write_blobs(tmp_path / "ds" / "blobs.mindrecord", n=400)
    fs = s3.bucket("torchrun")
    for f in os.listdir(tmp_path / "ds"):
        fs.put_file(str(tmp_path / "ds" / f), f"torchrun/{f}")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
           os.path.join(root, "tests", "dist_remote.py"), "s3://torchrun/blobs.mindrecord0", s3.endpoint,
           str(tmp_path / "cache"), str(tmp_path)]
    env = dict(os.environ, PYTHONPATH=child_pythonpath(), OMP_NUM_THREADS="1", AWS_ACCESS_KEY_ID="testing",
               AWS_SECRET_ACCESS_KEY="testing")
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    assert [r["world"] for r in ranks] == [2, 2]
    assert sorted(ranks[0]["ids"] + ranks[1]["ids"]) == list(range(len(rows)))       # every row once
    assert abs(len(ranks[0]["ids"]) - len(ranks[1]["ids"])) <= 1
    needed = _row_blocks(first, range(len(rows)))
    index = sum(os.path.getsize(tmp_path / "ds" / f) for f in os.listdir(tmp_path / "ds") if f.endswith(".db"))
    opening = index + 2 * (1 << 14)            # the .db files and headers: fetched by one rank, or by both
    total = sum(r["bytes"] for r in ranks)
    # (each file's last block is short: a little under ``needed`` when every block was fetched)
    assert needed - 2 * 4096 <= total - opening and total - 2 * opening <= 1.05 * needed, (total, opening, needed)
    assert sum(r["requests"] for r in ranks) < len(rows) / 4


def _rank_rows_bounded(url, cache, rank, world, limit, out):
    data = recordio.MindDataset(url, shuffle=True, num_shards=world, shard_id=rank, cache_dir=cache,
                                cache_limit=limit)
    out.put((rank, [(int(r["id"]), bytes(r["data"])) for r in data.create_dict_iterator(num_epochs=1,
                                                                                          output_numpy=True)]))


@pytest.mark.slow
def test_cache_limit_bounds_the_node_across_processes(tmp_path):
    """Two processes of one node share the cache and its bound: together they keep at most about
    ``cache_limit`` bytes (each kept up to the bound on its own before), and the node's counter matches
    the block maps."""
    from recordio.mindrecord.storage.cache_bound import HELD_FILE
    from recordio.mindrecord.storage.cache import scan_held

    first, rows = write_blobs(tmp_path / "ds" / "blobs.mindrecord", n=600)
    limit = int(0.3 * _row_blocks(first, range(len(rows))))
    ctx = multiprocessing.get_context("spawn")
    cache = str(tmp_path / "cache")
    with RangeServer(tmp_path / "ds") as server:
        out = ctx.Queue()
        procs = [ctx.Process(target=_rank_rows_bounded,
                             args=(f"{server.url}/blobs.mindrecord0", cache, r, 2, limit, out)) for r in range(2)]
        for p in procs:
            p.start()
        got = dict(out.get(timeout=180) for _ in procs)
        for p in procs:
            p.join(30)
            assert p.exitcode == 0
    assert sorted(i for r in got.values() for i, _ in r) == list(range(len(rows)))
    assert all(data == rows[i]["data"] for r in got.values() for i, data in r)
    held = scan_held(cache)
    with open(os.path.join(cache, HELD_FILE), "rb") as f:
        assert int.from_bytes(f.read(), "little") == held
    assert 0 < held <= 1.1 * limit, (held, limit)
    from recordio.mindrecord import clear_cache

    assert clear_cache(cache) > 0 and not os.path.exists(os.path.join(cache, HELD_FILE))


def test_plan_spans_covers_every_needed_block_in_aligned_spans_by_first_need():
    from recordio.mindrecord.storage.span_plan import SPAN, plan_spans

    rng = np.random.default_rng(9)
    sizes = rng.integers(5_000, 15_000, 1000)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    order = rng.permutation(1000)
    rows = [[("f", int(starts[i]), int(starts[i] + sizes[i]))] for i in order]
    for limit, rows_of in ((None, rows), (2 << 20, rows), (None, rows[::2])):
        pieces = plan_spans(rows_of, 4096, limit)
        cap = SPAN if limit is None else limit // 4
        assert [p[3] for p in pieces] == sorted(p[3] for p in pieces)
        assert all(b - a <= cap and a // SPAN == (b - 1) // SPAN and a % 4096 == 0 for _, a, b, _ in pieces)
        covered = {k for _, a, b, _ in pieces for k in range(a // 4096, b // 4096)}
        needed = {k for row in rows_of for _, a, b in row for k in range(a // 4096, (b + 4095) // 4096)}
        assert needed <= covered and len(covered - needed) <= 0.02 * len(needed)
        for pos, row in enumerate(rows_of):     # each row's first block comes in a span due by its position
            (_, a, _), = row
            assert any(s <= a < e and first <= pos for _, s, e, first in pieces)
        if limit is None and rows_of is rows:
            assert len(pieces) == -(-int(sizes.sum()) // SPAN)          # the whole file: one span per 4 MiB
