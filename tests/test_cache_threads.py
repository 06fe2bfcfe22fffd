"""The remote cache's block map between threads of one process: an eviction never clears a block that
another thread is fetching (byte-range locks exclude processes, not threads)."""

import threading

from recordio.mindrecord.storage.cache import BLOCK, CachedObject, scan_held
from recordio.mindrecord.storage.cache_bound import NodeCount


class Store:
    def __init__(self, data):
        self.data = data

    def fetch(self, url, start, end, etag):
        return self.data[start:end]


def test_an_eviction_leaves_the_blocks_a_thread_is_fetching(tmp_path):
    data = bytes(range(256)) * (6 * BLOCK // 256)
    in_window, go = threading.Event(), threading.Event()

    def check(obj, start, end):                 # after the bytes are written, before they are marked
        if threading.current_thread() is not threading.main_thread():
            in_window.set()
            assert go.wait(30)

    count = NodeCount(str(tmp_path), scan_held)
    count.value()
    obj = CachedObject(str(tmp_path / "dataset"), "shard.mindrecord", "http://x/shard.mindrecord", len(data), "e1",
                       Store(data), check=check, count=count)
    obj.ensure(4 * BLOCK, 6 * BLOCK)            # blocks 4 and 5 present, fetched by this thread
    reader = threading.Thread(target=obj.ensure, args=(BLOCK, 3 * BLOCK))      # blocks 1 and 2
    reader.start()
    assert in_window.wait(30)
    kept = obj.evict(0, 6)                      # everything, while blocks 1-2 are between write and mark
    go.set()
    reader.join(30)
    assert obj.marks().tolist() == [0, 1, 1, 0, 0, 0]
    assert obj.read(BLOCK, 3 * BLOCK) == data[BLOCK:3 * BLOCK]      # not a punched hole marked present
    assert count.value() == scan_held(str(tmp_path)) == 2 * BLOCK
    assert kept == [(1, 3)]                     # for the reader's bound to keep counting
