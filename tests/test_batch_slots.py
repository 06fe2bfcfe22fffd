"""A map's fused float32 outputs written straight into the batch that follows (recordio.batch_slots):
the batch is the block the rows were written into, with the values that stacking gives."""

import os
import numpy as np
import pytest

import recordio as ds
from recordio import batch_slots, vision

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def images(n=37, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, (20, 24, 3), dtype=np.uint8) for _ in range(n)]


def pipeline(imgs, batch, workers=1, chain=None, drop=False):
    data = ds.GeneratorDataset([(im, np.int32(i)) for i, im in enumerate(imgs)], ["image", "label"], shuffle=False)
    chain = chain or [vision.RandomHorizontalFlip(), vision.RandomColorAdjust(0.4, 0.4, 0.4),
                      vision.Rescale(1 / 255, 0.0), vision.Normalize(MEAN, STD), vision.HWC2CHW()]
    data = data.map(chain, input_columns="image", num_parallel_workers=workers).batch(batch, drop_remainder=drop)
    return [row["image"] for row in data.create_dict_iterator(num_epochs=1, output_numpy=True)]


def made(arr):
    return batch_slots.block_of([arr[k] for k in range(len(arr))]) is arr


@pytest.mark.parametrize("workers", [1, 2])
def test_batches_are_the_blocks_and_equal_the_stacked_rows(workers):
    imgs = images()
    got = pipeline(imgs, 8, workers)
    # a Python op at the end returns copies: no row is a slot, the batch is stacked as before
    want = pipeline(imgs, 8, workers, [vision.RandomHorizontalFlip(), vision.RandomColorAdjust(0.4, 0.4, 0.4),
                                       vision.Rescale(1 / 255, 0.0), vision.Normalize(MEAN, STD), vision.HWC2CHW(),
                                       lambda x: x.copy()])
    assert [b.shape for b in got] == [b.shape for b in want] == [(8, 3, 20, 24)] * 4 + [(5, 3, 20, 24)]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert all(made(b) for b in got[:4]) and not any(made(b) for b in want)
    assert not made(got[4])                 # the short last batch: stacked


def test_values_do_not_depend_on_batch_size_or_workers():
    imgs = images(40, 1)
    runs = [np.concatenate(pipeline(imgs, size, workers)) for size, workers in [(1, 1), (4, 2), (7, 1), (40, 2)]]
    for run in runs[1:]:
        np.testing.assert_array_equal(run, runs[0])


def test_rows_that_are_views_of_a_users_array_are_copied():
    """Only blocks recordio made are taken whole: a user's op returning views of its own array (in order,
    as many as the batch) still gets a batch of its own, not the user's array."""
    owned = np.arange(4 * 6, dtype=np.float32).reshape(4, 6)
    data = ds.GeneratorDataset([(np.int64(i),) for i in range(4)], ["i"], shuffle=False)
    data = data.map([lambda i: owned[int(i)]], input_columns="i").batch(4)
    (batch,) = [row["i"] for row in data.create_dict_iterator(num_epochs=1, output_numpy=True)]
    np.testing.assert_array_equal(batch, owned)
    batch[0, 0] = -1
    assert owned[0, 0] == 0


def test_a_slot_is_given_once_a_row_and_never_twice():
    slots = batch_slots.BatchSlots(2)
    with batch_slots.row_slot(slots, 0, 1):
        first = batch_slots.output_array((3,))
        second = batch_slots.output_array((3,))         # a second output of the same row: its own array
    assert first.base is not None and second.base is None
    with batch_slots.row_slot(slots, 0, 1):               # the row again: its slot was given
        assert batch_slots.output_array((3,)).base is not first.base
    assert slots.take(0, 0, (4,), np.dtype(np.float32)) is None        # another shape than the block's
    assert batch_slots.output_array((3,)).base is None                  # outside a row: np.empty


def test_block_of_needs_every_slot_in_order():
    slots = batch_slots.BatchSlots(3)
    rows = [slots.take(0, k, (2,), np.dtype(np.float32)) for k in range(3)]
    assert batch_slots.block_of(rows) is rows[0].base
    assert batch_slots.block_of(rows[::-1]) is None
    assert batch_slots.block_of(rows[:2]) is None
    assert batch_slots.block_of([rows[0], rows[1].copy(), rows[2]]) is None


def test_views_of_slots_are_not_the_block():
    """A later op that returns a view of its slot (transposed, flipped) changes the values: the batch is
    stacked from the views, not the block."""
    square = [vision.Rescale(1 / 255, 0.0), vision.Normalize(MEAN, STD), vision.HWC2CHW()]
    imgs = [im[:, :20] for im in images(8, 2)]
    for view in (lambda x: x.transpose(0, 2, 1), lambda x: x[:, ::-1]):
        got = pipeline(imgs, 4, 1, square + [view])
        want = pipeline(imgs, 4, 1, square + [lambda x: x.copy(), view])
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)


def chain_dataset(imgs, batch, workers=2):
    data = ds.GeneratorDataset([(im, np.int32(i)) for i, im in enumerate(imgs)], ["image", "label"], shuffle=True)
    chain = [vision.RandomHorizontalFlip(), vision.RandomColorAdjust(0.4, 0.4, 0.4), vision.Rescale(1 / 255, 0.0),
             vision.Normalize(MEAN, STD), vision.HWC2CHW()]
    return data.map(chain, input_columns="image", num_parallel_workers=workers).batch(batch)


def test_epochs_and_a_resume_give_the_same_batches():
    """Two epochs (the block table is kept across them) and a resume mid-epoch (rows counted from the
    resume point) give the batches of one uninterrupted run, blocks where the batches are whole."""
    imgs = images(24, 3)
    it = chain_dataset(imgs, 4).create_dict_iterator(num_epochs=2, output_numpy=True)
    reference = [[row["image"] for row in it] for _ in range(2)]
    assert all(made(b) for epoch in reference for b in epoch)
    assert not np.array_equal(np.concatenate(reference[0]), np.concatenate(reference[1]))   # reshuffled
    data = chain_dataset(imgs, 4)
    it = data.create_dict_iterator(num_epochs=2, output_numpy=True)
    head = [next(it)["image"] for _ in range(3)]
    state = it.state_dict()
    it.close()
    resumed = chain_dataset(imgs, 4)
    resumed.load_state_dict(state)
    it = resumed.create_dict_iterator(num_epochs=2, output_numpy=True)
    rest = [[row["image"] for row in it] for _ in range(2)]
    for got, want in zip(head + rest[0] + rest[1], reference[0] + reference[1]):
        np.testing.assert_array_equal(got, want)
    assert all(made(b) for b in rest[0] + rest[1])


def test_a_dropped_batchs_memory_is_reused_and_a_held_one_never():
    """The training loop drops each batch before the next: its memory makes a later block (no fresh pages
    a batch). Batches kept alive, or a tensor or a row view kept from one, are never written again."""
    torch = pytest.importorskip("torch")
    imgs = images(64, 4)
    want = pipeline(imgs, 4, 1, [vision.Rescale(1 / 255, 0.0), vision.Normalize(MEAN, STD), vision.HWC2CHW(),
                                 lambda x: x.copy()])
    chain = [vision.Rescale(1 / 255, 0.0), vision.Normalize(MEAN, STD), vision.HWC2CHW()]
    data = ds.GeneratorDataset([(im,) for im in imgs], ["image"], shuffle=False)
    data = data.map(chain, input_columns="image").batch(4)
    seen, kept, tensors, rows = set(), [], [], []
    for k, row in enumerate(data.create_dict_iterator(num_epochs=1, output_numpy=True)):
        batch = row["image"]
        assert made(batch)
        seen.add(batch.ctypes.data)
        if k % 4 == 1:
            kept.append((k, batch))
        elif k % 4 == 2:
            tensors.append((k, torch.from_numpy(batch)))
        elif k % 4 == 3:
            rows.append((k, batch[3]))
        del batch, row
    assert len(seen) < 16                  # memory came back and was used again
    for k, batch in kept:
        np.testing.assert_array_equal(batch, want[k])
    for k, tensor in tensors:
        np.testing.assert_array_equal(tensor.numpy(), want[k])
    for k, view in rows:
        np.testing.assert_array_equal(view, want[k][3])


def test_the_pool_skips_memory_that_someone_still_holds():
    pool = batch_slots._BlockPool(keep=2)
    block = pool.array((8, 5), np.float32)
    buf, address = block.base, block.ctypes.data
    del block                               # the block is gone, but its mmap is still held: not reused
    assert pool.array((8, 5), np.float32).ctypes.data != address
    blocks = [pool.array((8, 5), np.float32) for _ in range(4)]
    buffers = {id(b.base) for b in blocks}  # (their ids only: held, they would not be given back)
    del blocks
    assert sum(map(len, pool._free.values())) == 2                # four given back, two kept
    again = [pool.array((8, 5), np.float32) for _ in range(2)]
    assert all(id(b.base) in buffers for b in again)
    assert buf is not None


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="reads the process's memory maps (Linux)")
def test_blocks_are_private_memory():
    """A block's memory is a private anonymous map: a shared one is shmem (no transparent huge pages, a
    page fault for every 4 KiB a first batch writes)."""
    from recordio.batch_slots import _BlockPool
    block = _BlockPool().array((8, 3, 224, 224), np.float32)
    start = block.ctypes.data
    for line in open("/proc/self/maps"):
        span, perms = line.split()[:2]
        lo, hi = (int(v, 16) for v in span.split("-"))
        if lo <= start < hi:
            assert perms.endswith("p") and "/dev/zero" not in line, line
            break
    else:
        pytest.fail("the block's map was not found")


def jpegs(n=16, seed=5):
    cv2 = pytest.importorskip("cv2")
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        img = cv2.GaussianBlur(rng.integers(0, 256, (60, 80, 3), dtype=np.uint8), (7, 7), 2)
        out.append(np.frombuffer(cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, 90])[1], np.uint8))
    return out


def batches(rows, chain, batch=4):
    data = ds.GeneratorDataset([(r,) for r in rows], ["image"], shuffle=False)
    data = data.map(chain, input_columns="image").batch(batch)
    return [row["image"] for row in data.create_dict_iterator(num_epochs=1, output_numpy=True)]


def test_a_uint8_resize_that_ends_the_row_writes_into_the_batch():
    """The host part of a chain whose tail is offloaded (RandomCropDecodeResize, or Decode -> Resize) ends in
    a uint8 resize: it writes into the row's slot, the batch is the block, with the values stacking gives."""
    if vision.resampling.compiled_resize() is None:
        pytest.skip("the compiled resize is not built")
    rows = jpegs()
    for chain in ([vision.RandomCropDecodeResize((40, 48), scale=(0.3, 1.0))],           # decoded at full scale
                  [vision.RandomCropDecodeResize((12, 14), scale=(0.5, 1.0))],           # at 1/2 or 1/4 scale
                  [vision.Decode(), vision.Resize((24, 28))],
                  [vision.Resize((24, 28))]):
        source = [vision.Decode()(r) for r in rows] if len(chain) == 1 and type(chain[0]) is vision.Resize else rows
        got = batches(source, chain)
        want = batches(source, chain + [lambda x: x.copy()])
        assert [b.dtype for b in got] == [np.uint8] * 4 and all(made(b) for b in got), chain
        assert not any(made(b) for b in want)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)


def test_a_uint8_resize_before_a_level_run_leaves_the_slot_to_it():
    """Only the row's last op takes a uint8 slot: a resize before a level run (not fused with it) leaves the
    slot to the level run, whose float32 batch is the block; a resize followed by an op that hands it on
    unchanged is stacked (the resize was not last), with the same values."""
    if vision.resampling.compiled_resize() is None:
        pytest.skip("the compiled resize is not built")
    imgs = images(16, 6)
    floats = batches(imgs, [vision.Resize((16, 18)), vision.Rescale(1 / 255, 0.0), vision.Normalize(MEAN, STD),
                            vision.HWC2CHW()])
    assert all(b.dtype == np.float32 and b.shape == (4, 3, 16, 18) and made(b) for b in floats)
    from recordio.transforms import Compose, RandomOrder
    composed = batches(imgs, [Compose([vision.Resize((16, 18)), vision.Rescale(1 / 255, 0.0),
                                       vision.Normalize(MEAN, STD), vision.HWC2CHW()])])
    assert all(made(b) and b.dtype == np.float32 for b in composed)        # the Compose's members: not last
    for c, f in zip(composed, floats):
        np.testing.assert_array_equal(c, f)
    ordered = batches(imgs, [RandomOrder([vision.Resize((16, 18)), vision.RandomColorAdjust(0.4, 0.4, 0.4)])])
    want = batches(imgs, [RandomOrder([vision.Resize((16, 18)), vision.RandomColorAdjust(0.4, 0.4, 0.4)]),
                          lambda x: x.copy()])
    for o, w in zip(ordered, want):
        np.testing.assert_array_equal(o, w)
    passed = batches(imgs, [vision.Resize((16, 18)), lambda x: x])
    ends = batches(imgs, [vision.Resize((16, 18))])
    assert not any(made(b) for b in passed) and all(made(b) for b in ends)
    for p, e in zip(passed, ends):
        np.testing.assert_array_equal(p, e)


def test_a_colour_adjust_that_ends_the_row_writes_into_the_batch():
    imgs = images(16, 7)
    chain = [vision.RandomHorizontalFlip(), vision.RandomColorAdjust(0.4, 0.4, 0.4)]
    got, want = batches(imgs, chain), batches(imgs, chain + [lambda x: x.copy()])
    if not vision.color_kernels.has_c_kernels(imgs[0]):
        pytest.skip("the compiled colour kernels are not built")
    assert all(made(b) for b in got)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
