"""The iterator's producer: a thread while the consumer works between outputs, the consumer's own
thread while it does not. Which thread runs the pipeline changes nothing of what comes out."""

import threading
import time

import numpy as np
import pytest

from recordio import FileWriter
from recordio.dataset import GeneratorDataset, MindDataset
from recordio.dataset.producer import PipelineProducer


@pytest.fixture(scope="module")
def ids_path(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("adaptive") / "ids.mindrecord")
    with FileWriter(path, fsync=False) as w:
        w.add_schema({"x": {"type": "int64"}})
        w.write_raw_data([{"x": i} for i in range(10_000)])
    return path


@pytest.fixture
def _pipeline(ids_path):
    def make(n, where, shuffle=False):
        """Rows 0..n-1 whose map records the thread that ran it for each row."""
        def record(x):
            where[int(x)] = threading.current_thread().name
            return x
        # one map worker: the map runs where the iterator's producer runs (with more, a loaded
        # machine can make the map's own probe move it to a worker thread)
        return MindDataset(ids_path, shuffle=shuffle, num_samples=n).map(record, "x", num_parallel_workers=1)
    return make


def test_an_idle_consumer_gets_the_pipeline_in_its_own_thread(_pipeline):
    where = {}
    got = [int(r["x"]) for r in _pipeline(2000, where).create_dict_iterator(num_epochs=1, output_numpy=True)]
    assert got == list(range(2000))
    me = threading.current_thread().name
    assert where[0] == "recordio-pipeline"                  # it starts threaded
    here = sum(where[i] == me for i in range(200, 2000))    # and moves here once measured
    assert here > 1500, here                                # (a busy machine may stretch a window)


def test_a_busy_consumer_keeps_or_gets_back_the_producer_thread(_pipeline):
    where = {}
    it = _pipeline(300, where).create_dict_iterator(num_epochs=1, output_numpy=True)
    got = []
    for k, row in enumerate(it):
        got.append(int(row["x"]))
        if k >= 100:
            time.sleep(0.002)                  # a training step, after a stretch of doing nothing
    assert got == list(range(300))
    me = threading.current_thread().name
    assert any(where[i] == me for i in range(40, 120))                        # it moved here
    back = 100 + 2 * PipelineProducer.WINDOW + 64                     # two windows, then the map chunk in hand
    assert all(where[i] == "recordio-pipeline" for i in range(back, 300))


def test_resume_across_a_switch_is_exact(ids_path):
    ds = MindDataset(ids_path, shuffle=True, num_samples=500)
    it = ds.create_dict_iterator(num_epochs=2, output_numpy=True)
    first = [int(next(it)["x"]) for _ in range(300)]          # past a switch to this thread
    state = it.state_dict()
    rest = [int(r["x"]) for r in it]
    again = MindDataset(ids_path, shuffle=True, num_samples=500)
    again.load_state_dict(state)
    assert [int(r["x"]) for r in again.create_dict_iterator(num_epochs=2, output_numpy=True)] == rest
    assert len(set(first + rest[:200])) == 500


@pytest.mark.parametrize("after", [5, 100])
def test_breaking_out_stops_the_pipeline(after, _pipeline):
    where = {}
    it = _pipeline(10_000, where).create_dict_iterator(num_epochs=1, output_numpy=True)
    for k, _ in enumerate(it):
        if k == after:
            break
    it.close()
    seen = len(where)
    time.sleep(0.2)
    assert len(where) == seen and seen < 10_000
    assert not any(t.name == "recordio-pipeline" and t.is_alive() for t in threading.enumerate()
                   if t is not threading.current_thread() and getattr(t, "_target", None) is not None
                   and getattr(t._target, "__self__", None) is it._stream._producer)


def test_an_error_reaches_the_consumer_in_either_thread(ids_path):
    def boom(x):
        if int(x) == 250:
            raise ValueError("row 250 is bad")
        return x
    ds = MindDataset(ids_path, shuffle=False, num_samples=400).map(boom, "x")
    got = []
    with pytest.raises(ValueError, match="row 250"):
        for row in ds.create_dict_iterator(num_epochs=1, output_numpy=True):
            got.append(int(row["x"]))
    assert got == list(range(len(got))) and len(got) <= 250      # map chunks: rows before the error


def test_the_next_iterator_starts_where_the_last_ended(_pipeline):
    where = {}
    ds = _pipeline(2000, where)
    for _ in ds.create_dict_iterator(num_epochs=1, output_numpy=True):
        pass
    me = threading.current_thread().name
    assert where[1999] == me
    where.clear()
    assert [int(r["x"]) for r in ds.create_dict_iterator(num_epochs=1, output_numpy=True)] == list(range(2000))
    assert where[0] == me                                   # no thread to start and measure again


def test_a_generator_source_stays_in_one_thread():
    """User code may hold thread-bound resources (a sqlite3 connection opened by the generator): a
    pipeline with a generator source never moves between threads."""
    import sqlite3

    def rows():
        conn = sqlite3.connect(":memory:")                 # bound to the thread that opened it
        for i in range(3000):
            yield (np.int64(conn.execute("SELECT ?", (i,)).fetchone()[0]),)
    ds = GeneratorDataset(rows, "x")
    assert [int(r["x"]) for r in ds.create_dict_iterator(num_epochs=1, output_numpy=True)] == list(range(3000))
