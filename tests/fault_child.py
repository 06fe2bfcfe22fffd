"""Child process of tests/test_faults.py: write a dataset under a file size limit (``ulimit -f``).

    python fault_child.py MODE PATH LIMIT_BYTES      MODE: fresh | overwrite | append

Prints ``COMMITTED`` when ``commit()`` returned, else the exception; exits 0 either way.
"""

import resource
import sys

import recordio

ROWS = 24


def rows(version):
    return [{"id": version * 1000 + i, "blob": bytes([version, i % 256]) * (300 + 17 * i)} for i in range(ROWS)]


def write(path, version, overwrite):
    with recordio.FileWriter(path, shard_num=2, overwrite=overwrite) as w:
        w.set_header_size(1 << 14)
        w.set_page_size(1 << 15)
        w.add_schema({"id": {"type": "int64"}, "blob": {"type": "bytes"}}, f"version {version}")
        w.add_index(["id"])
        for k in range(0, ROWS, 6):
            w.write_raw_data(rows(version)[k:k + 6])


def append(path, version):
    with recordio.FileWriter.open_for_append(path + "0") as w:
        for k in range(0, ROWS, 6):
            w.write_raw_data(rows(version)[k:k + 6])


def main(mode, path, limit):
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    try:
        if mode == "append":
            append(path, 2)
        else:
            write(path, 2, overwrite=(mode == "overwrite"))
    except Exception as exc:  # reported to the parent, which checks the dataset left behind
        print(f"FAILED {type(exc).__name__}: {exc}")
        return 0
    print("COMMITTED")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
