"""Child process for the crash tests: writes (or appends to) a dataset, printing its progress."""

import sys

import numpy as np

import recordio

SCHEMA = {"id": {"type": "int64"}, "img": {"type": "bytes"}, "vec": {"type": "int32", "shape": [-1]}}


def rows(start, n):
    return [{"id": i, "img": bytes([i % 251]) * (500 + (i * 37) % 4000), "vec": np.arange(i % 9, dtype=np.int32)}
            for i in range(start, start + n)]


def main(mode, path, shards, start, n):
    if mode == "append":
        writer = recordio.FileWriter.open_for_append(path)
    else:
        writer = recordio.FileWriter(path, shards, overwrite=(mode == "overwrite"))
        writer.set_header_size(1 << 14)
        writer.set_page_size(1 << 15)
        writer.add_schema(SCHEMA)
    for k in range(0, n, 10):
        writer.write_raw_data(rows(start + k, min(10, n - k)))
        print("WROTE", flush=True)
    print("COMMIT-START", flush=True)
    writer.commit()
    print("COMMITTED", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
