"""Small helpers for tests of pipelines (and of code built on them): numbered datasets whose rows
say who they are, and the row ids an iteration delivered."""

import numpy as np

__all__ = ["ids_of", "numbered_rows", "write_numbered"]


def numbered_rows(n, start=0):
    """Rows whose every field is a function of the row number ``i``."""
    return [{"id": np.int64(i), "label": np.int32(i % 5), "vec": np.full(4, i, np.float32),
             "name": f"row-{i}", "data": bytes([i % 256]) * (1 + i % 7)} for i in range(start, start + n)]


def write_numbered(path, n, shard_num=1, per_call=None):
    """Write ``numbered_rows(n)`` as a MindRecord dataset (``label`` and ``id`` indexed)."""
    from recordio.mindrecord.write.writer import FileWriter

    with FileWriter(str(path), shard_num=shard_num, overwrite=True) as w:
        w.add_schema({"id": {"type": "int64"}, "label": {"type": "int32"},
                      "vec": {"type": "float32", "shape": [4]}, "name": {"type": "string"},
                      "data": {"type": "bytes"}}, "numbered rows")
        w.add_index(["id", "label"])
        step = per_call or n
        for start in range(0, n, step):
            w.write_raw_data(numbered_rows(min(step, n - start), start))
    return str(path) + ("0" if shard_num > 1 else "")


def ids_of(iterator, column="id"):
    """The ``column`` values an iterator delivered, flattened over batches."""
    out = []
    for row in iterator:
        out.extend(np.atleast_1d(np.asarray(row[column] if isinstance(row, dict) else row)).tolist())
    return out


def epoch_ids(data, epochs=1):
    """The ``id`` values of each of ``epochs`` epochs of a dataset's dict iterator."""
    it = data.create_dict_iterator(num_epochs=epochs, output_numpy=True)
    return [ids_of(it) for _ in range(epochs)]
