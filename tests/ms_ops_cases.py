"""Pipelines of MindSpore's non-vision dataset ops, written once and run on both sides.

Each case is ``case(ds, T) -> result`` with ``ds`` either ``mindspore.dataset`` or ``recordio.dataset``
and ``T`` the matching ``transforms`` module; results are lists/dicts of numpy values. The MindSpore
side runs them through ``ms_oracle.py`` (job ``{"op": "case", "name": ...}``); this module imports
neither library itself.
"""

import numpy as np


def _rows(data, epochs=1):
    iterator = data.create_tuple_iterator(num_epochs=epochs, output_numpy=True)
    out = []
    for _ in range(epochs):
        out.append([list(row) for row in iterator])
    return out if epochs > 1 else out[0]


def _one(ds, op, *values, outs=None):
    """``op`` mapped over one row of ``values`` (a GeneratorDataset of one row)."""
    names = [f"c{i}" for i in range(len(values))]
    data = ds.GeneratorDataset(lambda: iter([tuple(values)]), names)
    data = data.map(operations=op, input_columns=names, output_columns=outs)
    return _rows(data)[0]


def _ragged(ds, n=10):
    """Rows ``(a, b)``: ``a = arange(i % 4 + 1)`` (int32, ragged), ``b = i`` (int64)."""
    class Source:
        def __getitem__(self, i):
            return np.arange(i % 4 + 1, dtype=np.int32), np.array(i, np.int64)

        def __len__(self):
            return n
    return ds.GeneratorDataset(Source(), ["a", "b"], shuffle=False)


def tensor_ops(ds, T):
    u8 = np.array([1, 2, 3], np.uint8)
    grid = np.arange(12).reshape(3, 4)
    return [
        _one(ds, T.Concatenate(0, np.array([4, 2], np.uint8), np.array([9, 10], np.uint8)), u8),
        _one(ds, T.Concatenate(-1, None, np.array([7.5], np.float32)), np.array([1.0, 2.0], np.float32)),
        _one(ds, T.Concatenate(), u8),
        _one(ds, T.Fill(-3), u8), _one(ds, T.Fill(300), u8), _one(ds, T.Fill(-2.7), np.array([1, 5], np.int32)),
        _one(ds, T.Fill(5), np.array([False, True])), _one(ds, T.Fill(3), np.array(1.0)),
        _one(ds, T.Fill("ab"), np.array(["x", "yyy"])),
        _one(ds, T.Mask(T.Relational.EQ, 255), np.array([255, 1], np.uint8)),
        _one(ds, T.Mask(T.Relational.LE, 2.5), u8), _one(ds, T.Mask(T.Relational.LT, -1.5), np.array([-2, -1, 0],
                                                                                                   np.int8)),
        _one(ds, T.Mask(T.Relational.NE, 2, ds_type(ds, "uint8")), np.array([1, 2])),
        _one(ds, T.Mask(T.Relational.GT, 0), np.array([[1, -2]])),
        _one(ds, T.Mask(T.Relational.GE, 1.5, ds_type(ds, "float32")), np.array([1.0, 1.5, 2.0])),
        _one(ds, T.Mask(T.Relational.EQ, "a"), np.array(["a", "b"])),
        _one(ds, T.Slice(slice(0, 3)), np.arange(10)), _one(ds, T.Slice([1, -1, 3]), np.arange(10)),
        _one(ds, T.Slice(slice(0, 1), [0, 2]), grid), _one(ds, T.Slice(1), grid),
        _one(ds, T.Slice(Ellipsis, [1]), grid),
        _one(ds, T.Slice(None), np.arange(4)), _one(ds, T.Slice(slice(4, 1, -1)), np.arange(6)),
        _one(ds, T.Slice(slice(-3, 5)), np.arange(6)), _one(ds, T.Slice(slice(3, 1)), np.arange(6)),
        _one(ds, T.Slice(slice(1, 5, 2)), np.array(["a", "b", "c", "d", "e"])),
        _one(ds, T.OneHot(5), np.array([1, 3])), _one(ds, T.OneHot(5), np.array(3)),
        _one(ds, T.OneHot(4), np.array([2], np.int8)), _one(ds, T.OneHot(3), np.array([[1], [2], [0]])),
        _one(ds, T.OneHot(4, 0.2), np.array([1], np.uint8)), _one(ds, T.OneHot(3, 1), np.array(1, np.int32)),
        _one(ds, T.OneHot(3, 0), np.array([1, 2], np.uint16)),
        _one(ds, T.PadEnd([5], -1), u8), _one(ds, T.PadEnd([2]), u8), _one(ds, T.PadEnd([5], 2.5), u8),
        _one(ds, T.PadEnd([2, 3], -1), np.ones((1, 2), np.float32)), _one(ds, T.PadEnd([3]), np.array(["a"])),
        _one(ds, T.PadEnd([2, 2, 2, 4], -1), np.ones((2, 2, 2, 3), np.float32)),
        _one(ds, T.PadEnd([3], 1.7), np.array([1], np.float16)), _one(ds, T.PadEnd([1]), np.array(5)),
        _one(ds, T.Fill(1e40), np.array([1], np.float32)), _one(ds, T.Fill(2 ** 40), np.array([1], np.int32)),
        _one(ds, T.PadEnd([3], 1e6), np.array([1], np.float16)), _one(ds, T.PadEnd([3], 300), np.array([1], np.uint8)),
        _one(ds, T.Mask(T.Relational.EQ, 1e6), np.array([1], np.float16)),
        _one(ds, T.Mask(T.Relational.LT, 300), np.array([1], np.uint8)),
        _one(ds, T.Unique(), np.array([[5, 1], [5, 3]]), outs=["u", "i", "n"]),
        _one(ds, T.Unique(), np.array([[2.5, 1.0, 2.5]], np.float32), outs=["u", "i", "n"]),
        _one(ds, T.Unique(), np.array([[3, 3, 1]], np.uint8), outs=["u", "i", "n"]),
    ]


def ds_type(ds, name):
    """``mstype.<name>`` of the side's library (``mindspore.common.dtype`` / ``recordio.common.dtype``)."""
    import importlib
    root = ds.__name__.split(".")[0]
    return getattr(importlib.import_module(f"{root}.common.dtype"), name)


def tensor_op_failures(ds, T):
    """The error type (not the wording) of ops refusing their input data."""
    cases = [(T.Concatenate(0, np.array([4, 2])), np.ones(2, np.uint8)),
             (T.Concatenate(0, np.array([1], np.uint8)), np.ones((2, 2), np.uint8)),
             (T.Fill("a"), np.array([1])), (T.Mask(T.Relational.EQ, "a"), np.array([1])),
             (T.Slice([20]), np.arange(5)), (T.Slice(1, 1), np.arange(5)), (T.Slice([]), np.arange(5)),
             (T.OneHot(4), np.array([4])), (T.OneHot(4), np.array([[1, 3], [2, 0]])),
             (T.OneHot(4), np.array([True])),
             (T.PadEnd([2, 3]), np.ones(3)), (T.Unique(), np.array([5, 1, 5])), (T.Unique(), np.array([["b", "a"]]))]
    out = []
    for op, value in cases:
        try:
            _one(ds, op, value, outs=["u", "i", "n"] if type(op).__name__ == "Unique" else None)
            out.append("no error")
        except Exception as exc:
            out.append(type(exc).__name__)
    return out


def padded_batches(ds, T):
    def size(info):
        return info.get_batch_num() + 1
    return [_rows(_ragged(ds).padded_batch(3, pad_info={})),
            _rows(_ragged(ds).padded_batch(3, pad_info={"a": ([5], -1)})),
            _rows(_ragged(ds).padded_batch(4, drop_remainder=True, pad_info={"a": None})),
            _rows(_ragged(ds).padded_batch(size, pad_info={}), 2),
            _rows(_ragged(ds).project(["b"]).batch(lambda info: info.get_epoch_num() + 2, drop_remainder=True), 2),
            _rows(_ragged(ds).project(["b"]).padded_batch(lambda info: 3 + info.get_batch_num())),
            _rows(_ragged(ds).map(T.TypeCast(np.float32), input_columns="a").padded_batch(
                2, pad_info={"a": ([4], 0.5)})),
            _rows(ds.GeneratorDataset([("a", np.array(["x"])), ("hello", np.array(["yy", "z"]))], ["s", "t"],
                                      shuffle=False).padded_batch(2, pad_info={}))]


def bucket_batches(ds, T):
    def by_label(a, b):
        return int(b) % 3
    return [_rows(_ragged(ds).bucket_batch_by_length(["a"], [2, 3], [2, 3, 2])),
            _rows(_ragged(ds).bucket_batch_by_length(["a"], [2, 3], [2, 3, 2], drop_remainder=True)),
            _rows(_ragged(ds).bucket_batch_by_length(["a"], [2, 4], [2, 3, 2], pad_info={"a": (None, -1)},
                                                    pad_to_bucket_boundary=True)),
            _rows(_ragged(ds).bucket_batch_by_length(["a", "b"], [2, 4], [2, 3, 2], element_length_function=by_label)),
            _rows(_ragged(ds).bucket_batch_by_length(["a"], [2, 4], [2, 3, 2], pad_info={"a": ([6], 9)})),
            _rows(_ragged(ds).bucket_batch_by_length(["b"], [1], [3, 4])),
            _rows(_ragged(ds, 7).repeat(2).bucket_batch_by_length(["a"], [3], [4, 2]))]


def padded_dataset(ds, T):
    samples = [{"image": np.array([1, 2, 3], np.uint8), "label": np.array(7, np.int64), "n": 3, "s": "str",
                "v": [1.5, 2.5]},
               {"image": np.array([9], np.uint8), "label": np.array(-1, np.int64), "n": -4, "s": "t",
                "v": [0.0, 1.0]}]
    padded = ds.PaddedDataset(samples)
    out = {"names": padded.get_col_names(), "size": padded.get_dataset_size(), "rows": _rows(padded)}
    for shards in (2, 3):
        for shard in range(shards):
            data = _ragged(ds, 5).project(["b"]) + _ragged(ds, 3).project(["b"]) + ds.PaddedDataset(
                [{"b": np.array(900, np.int64)}])
            data.use_sampler(ds.DistributedSampler(shards, shard, shuffle=False))
            out[f"{shards}/{shard}"] = [int(r[0]) for r in _rows(data)]
            out[f"{shards}/{shard} size"] = data.get_dataset_size()
    return out


def pipeline_facts(ds, T):
    data = _ragged(ds)
    return {"repeat": [data.get_repeat_count(), ds.PaddedDataset([{"a": 1}]).repeat(3).get_repeat_count(),
                       _ragged(ds).repeat(3).batch(1).get_repeat_count(),
                       _ragged(ds).repeat(3).repeat(2).get_repeat_count(), _ragged(ds).repeat().get_repeat_count()],
            "classes": [data.num_classes()],
            "apply": _ragged(ds).apply(lambda d: d.skip(3)).get_dataset_size(),
            "batch sizes": [_ragged(ds).batch(lambda info: 3).get_batch_size(),
                            _ragged(ds).padded_batch(2).get_batch_size(),
                            _ragged(ds).project("b").batch(lambda info: 3).get_dataset_size(),
                            _ragged(ds).bucket_batch_by_length(["a"], [2], [2, 3]).get_dataset_size()]}


def argument_errors(ds, T):
    """The error type each bad construction raises (None: accepted)."""
    attempts = [
        lambda: T.Concatenate(1), lambda: T.Concatenate(0, [1]), lambda: T.Concatenate(0, np.ones((2, 2))),
        lambda: T.Concatenate("0"), lambda: T.Fill([1]), lambda: T.Fill(None), lambda: T.Mask(1, 2),
        lambda: T.Mask(T.Relational.EQ, [1]), lambda: T.Mask(T.Relational.EQ, 1, "int32"),
        lambda: T.Slice("a"), lambda: T.Slice([1, "a"]), lambda: T.Slice(1.5),
        lambda: T.OneHot(0), lambda: T.OneHot(-2), lambda: T.OneHot(2.0), lambda: T.OneHot(True),
        lambda: T.OneHot(4, "0.1"), lambda: T.OneHot(4, 1.5), lambda: T.OneHot(4, -0.1),
        lambda: T.PadEnd((3,)), lambda: T.PadEnd([0]), lambda: T.PadEnd([2.0]), lambda: T.PadEnd([3], [1]),
        lambda: T.RandomChoice([]), lambda: T.RandomChoice((T.Fill(1),)), lambda: T.RandomChoice([T.Fill]),
        lambda: T.RandomChoice([T.Fill(1), 3]), lambda: T.RandomApply([T.Fill(1)], 1.5),
        lambda: T.RandomApply([T.Fill(1)], "1"), lambda: T.RandomApply([T.Fill(1)], -0.5),
        lambda: T.RandomOrder([]), lambda: T.RandomOrder("x"),
        lambda: ds.PaddedDataset([]), lambda: ds.PaddedDataset([1]), lambda: ds.PaddedDataset(({"a": 1},)),
        lambda: ds.PaddedDataset(None),
        lambda: _ragged(ds).padded_batch(0), lambda: _ragged(ds).padded_batch("2"),
        lambda: _ragged(ds).padded_batch(lambda a, b: 1), lambda: _ragged(ds).padded_batch(2, pad_info=[1]),
        lambda: _ragged(ds).padded_batch(2, pad_info={"a": (None,)}),
        lambda: _ragged(ds).padded_batch(2, pad_info={1: None}),
        lambda: _ragged(ds).padded_batch(2, pad_info={"a": ([0], 1)}), lambda: _ragged(ds).padded_batch(2, 1),
        lambda: _ragged(ds).batch(lambda: 1), lambda: _ragged(ds).batch(2.5),
        lambda: _ragged(ds).bucket_batch_by_length("a", [1], [1, 2]),
        lambda: _ragged(ds).bucket_batch_by_length(["a", "b"], [1], [1, 2]),
        lambda: _ragged(ds).bucket_batch_by_length(["a"], [], [1]),
        lambda: _ragged(ds).bucket_batch_by_length(["a"], [1.5], [1, 2]),
        lambda: _ragged(ds).bucket_batch_by_length(["a"], [0], [1, 2]),
        lambda: _ragged(ds).bucket_batch_by_length(["a"], [2, 2], [1, 2, 3]),
        lambda: _ragged(ds).bucket_batch_by_length(["a"], [1], [1]),
        lambda: _ragged(ds).bucket_batch_by_length(["a"], [1], [1, 0]),
        lambda: _ragged(ds).bucket_batch_by_length(["a"], [1], [1, 2.0]),
        lambda: _ragged(ds).bucket_batch_by_length(["a"], [1], [1, 2], element_length_function=3),
        lambda: _ragged(ds).bucket_batch_by_length(["a"], [1], [1, 2], drop_remainder=1),
        lambda: _ragged(ds).bucket_batch_by_length(["a"], [1], [1, 2], pad_info=[]),
        lambda: _ragged(ds).apply(3), lambda: _ragged(ds).apply(lambda d: 5),
        lambda: _ragged(ds).device_que(send_epoch_end=1), lambda: _ragged(ds).device_que(queue_name=3),
        lambda: ds.zip([_ragged(ds)]), lambda: ds.zip((_ragged(ds),)), lambda: ds.zip((_ragged(ds), 3)),
        lambda: concat_use(ds, ds.SequentialSampler()), lambda: concat_use(ds, ds.DistributedSampler(2, 0)),
        lambda: concat_use(ds, ds.DistributedSampler(2, 0, shuffle=False, num_samples=2)),
        lambda: concat_use(ds, ds.RandomSampler(replacement=True)),
        lambda: concat_use(ds, ds.RandomSampler(num_samples=3)),
    ]
    out = []
    for attempt in attempts:
        try:
            attempt()
            out.append(None)
        except Exception as exc:
            out.append(type(exc).__name__)
    return out


def concat_use(ds, sampler):
    data = _ragged(ds, 5) + _ragged(ds, 3)
    data.use_sampler(sampler)
    return data


CASES = {f.__name__: f for f in (tensor_ops, tensor_op_failures, padded_batches, bucket_batches, padded_dataset,
                                 pipeline_facts, argument_errors)}
