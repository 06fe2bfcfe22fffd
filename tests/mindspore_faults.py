"""Cases run the same way on ``mindspore.mindrecord`` and ``recordio.mindrecord``.

``python mindspore_faults.py mindspore|recordio WORKDIR`` prints one JSON object:
``faults``: for each fault case, the names of the raised exception's classes (its MRO) and its
message, or ``null`` when nothing was raised; ``behaviour``: MindPage's categories and pages and
FileReader's ``get_next`` after exhaustion and after ``close``, as plain values.
``tests/test_mindrecord_compat.py`` runs it under both interpreters and compares.
"""

import json
import os
import sys

import numpy as np

SCHEMA = {"file_name": {"type": "string"}, "label": {"type": "int32"}, "data": {"type": "bytes"}}


def rows(n=10):
    return [{"file_name": f"{i:03d}.jpg", "label": i % 4, "data": bytes([i]) * 5} for i in range(n)]


def write(mr, name, shards=1):
    writer = mr.FileWriter(name, shards)
    writer.add_schema(SCHEMA, "s")
    writer.add_index(["file_name", "label"])
    writer.write_raw_data(rows())
    writer.commit()


def make_cases(mr):
    def text_file(name, content):
        with open(name, "w") as f:
            f.write(content)

    def writer_with_schema(name, schema):
        writer = mr.FileWriter(name)
        writer.add_schema(schema, "s")
        return writer

    def missing_shard(name, k):
        write(mr, name, 4)
        os.remove(f"{name}{k}")
        return mr.FileReader(f"{name}{(k + 1) % 4}")

    def missing_db(name):
        write(mr, name)
        os.remove(name + ".db")
        return mr.FileReader(name)

    def invalid_db(name):
        write(mr, name)
        os.remove(name + ".db")
        text_file(name + ".db", "just for test")
        return mr.FileReader(name)

    def write_rows(name, data, schema=None):
        writer = writer_with_schema(name, schema or SCHEMA)
        writer.write_raw_data(data)
        writer.commit()

    def page(name):
        write(mr, name, 4)
        return mr.MindPage(name + "0")

    def page_field(name, field):
        p = page(name)
        p.category_field = field
        return p

    return {
        "writer_shard_num_none": lambda n: mr.FileWriter(n, None),
        "writer_shard_num_str": lambda n: mr.FileWriter(n, "1"),
        "writer_shard_num_0": lambda n: mr.FileWriter(n, 0),
        "writer_shard_num_1001": lambda n: mr.FileWriter(n, 1001),
        "writer_overwrite_int": lambda n: mr.FileWriter(n, 1, overwrite=1),
        "writer_name_trailing_slash": lambda n: mr.FileWriter(n + "/"),
        "writer_name_space": lambda n: mr.FileWriter(" " + n),
        "writer_name_bad_char": lambda n: mr.FileWriter(n + "?x"),
        "writer_exists_data": lambda n: (text_file(n, "x"), write(mr, n)),
        "writer_exists_db": lambda n: (text_file(n + ".db", "x"), write(mr, n)),
        "add_index_without_schema": lambda n: mr.FileWriter(n).add_index(["label"]),
        "add_index_not_list": lambda n: writer_with_schema(n, SCHEMA).add_index("label"),
        "add_index_blob_field": lambda n: writer_with_schema(n, SCHEMA).add_index(["data"]),
        "add_index_unknown_field": lambda n: writer_with_schema(n, SCHEMA).add_index(["nope"]),
        "schema_type_str": lambda n: writer_with_schema(n, {"a": {"type": "str"}}),
        "schema_type_np_int32": lambda n: writer_with_schema(n, {"a": {"type": "np.int32"}}),
        "schema_not_dict": lambda n: writer_with_schema(n, [1]),
        "schema_bad_shape": lambda n: writer_with_schema(n, {"a": {"type": "int32", "shape": [0]}}),
        "write_empty_list": lambda n: write_rows(n, []),
        "write_not_list": lambda n: write_rows(n, {"label": 1}),
        "write_item_not_dict": lambda n: write_rows(n, [1]),
        "write_unknown_field_only": lambda n: write_rows(n, [{"filename": "a", "label": 1, "data": b"x"}]),
        "write_bad_type": lambda n: write_rows(n, [{"file_name": "a", "label": "x", "data": b"x"}]),
        "write_after_commit": lambda n: (lambda w: (w.write_raw_data(rows()), w.commit(),
                                                    w.write_raw_data(rows())))(writer_with_schema(n, SCHEMA)),
        "commit_twice": lambda n: (lambda w: (w.write_raw_data(rows()), w.commit(), w.commit()))(
            writer_with_schema(n, SCHEMA)),
        "reader_missing_everything": lambda n: mr.FileReader(n),
        "reader_missing_first": lambda n: missing_shard(n, 0),
        "reader_missing_last": lambda n: missing_shard(n, 3),
        "reader_missing_db": missing_db,
        "reader_invalid_db": invalid_db,
        "reader_invalid_file": lambda n: (text_file(n, "s" * 100), mr.FileReader(n)),
        "reader_num_consumer_none": lambda n: (write(mr, n), mr.FileReader(n, None)),
        "reader_num_consumer_str": lambda n: (write(mr, n), mr.FileReader(n, "2")),
        "reader_num_consumer_0": lambda n: (write(mr, n), mr.FileReader(n, 0)),
        "reader_num_consumer_huge": lambda n: (write(mr, n), mr.FileReader(n, 100000)),
        "reader_columns_str": lambda n: (write(mr, n), mr.FileReader(n, 1, "label")),
        "reader_columns_unknown": lambda n: (write(mr, n), list(mr.FileReader(n, 1, ["nope"]).get_next())),
        "page_num_consumer_none": lambda n: (write(mr, n), mr.MindPage(n, None)),
        "page_category_not_candidate": lambda n: page_field(n, "data"),
        "page_category_not_str": lambda n: page_field(n, 1),
        "page_id_out_of_range": lambda n: page_field(n, "label").read_at_page_by_id(99, 0, 1),
        "page_id_negative": lambda n: page_field(n, "label").read_at_page_by_id(-1, 0, 1),
        "page_page_str": lambda n: page_field(n, "label").read_at_page_by_id(0, "0", 1),
        "page_num_row_0": lambda n: page_field(n, "label").read_at_page_by_id(0, 0, 0),
        "page_past_end": lambda n: page_field(n, "label").read_at_page_by_id(0, 5, 2),
        "page_name_unknown": lambda n: page_field(n, "file_name").read_at_page_by_name("abc.jpg", 0, 1),
        "page_name_not_str": lambda n: page_field(n, "file_name").read_at_page_by_name(1, 0, 1),
        "page_without_category": lambda n: page(n).read_at_page_by_id(0, 0, 1),
    }


def plain(row):
    """A row as JSON-able values (numpy scalars and arrays as lists, bytes as hex)."""
    out = {}
    for key, value in row.items():
        if isinstance(value, bytes):
            value = value.hex()
        elif isinstance(value, np.ndarray):
            value = value.tolist()
        elif isinstance(value, np.generic):
            value = value.item()
        out[key] = value
    return out


def behaviour(mr):
    name = "behaviour.mindrecord"
    writer = mr.FileWriter(name, 4)
    writer.add_schema({"file_name": {"type": "string"}, "label": {"type": "int64"}, "score": {"type": "float32"},
                       "data": {"type": "bytes"}, "v": {"type": "int32", "shape": [-1]}}, "s")
    writer.add_index(["file_name", "label", "score"])
    writer.write_raw_data([{"file_name": f"f{i % 7}.jpg", "label": [30, 5, 17, 5, 2][i % 5], "score": (i % 3) / 2,
                            "data": bytes([i]) * 3, "v": np.arange(i % 4, dtype=np.int32)} for i in range(23)])
    writer.commit()
    page = mr.MindPage(name + "0")
    out = {"candidates": page.candidate_fields, "pages": {}, "info": {}}
    for field in ("label", "file_name", "score"):
        page.category_field = field
        out["info"][field] = page.read_category_info()
        for cid in range(3):
            for number in range(3):
                try:
                    rows = page.read_at_page_by_id(cid, number, 2)
                    out["pages"][f"{field}/{cid}/{number}"] = [plain(r) for r in rows]
                except RuntimeError:
                    out["pages"][f"{field}/{cid}/{number}"] = "RuntimeError"
    page.category_field = "label"
    out["by_name"] = [plain(r) for r in page.read_at_page_by_name("5", 1, 3)]
    reader = mr.FileReader(name + "0")
    first = sum(1 for _ in reader.get_next())
    again = sum(1 for _ in reader.get_next())
    reader.close()
    closed = sum(1 for _ in reader.get_next())
    reader = mr.FileReader(name + "0")
    partial = 0
    for _ in reader.get_next():
        partial += 1
        if partial == 5:
            break
    rest = sum(1 for _ in reader.get_next())
    reader.close()
    out["get_next"] = {"first": first, "again": again, "after_close": closed, "partial": partial, "rest": rest}
    return out


def describe(exc):
    if exc is None:
        return None
    message = str(exc)
    if "Dataset Pipeline Error Message:" in message:          # MindSpore's C++ report: keep its line
        message = message.split("Dataset Pipeline Error Message:")[1].split("C++ Call Stack")[0]
        message = message.strip("- \n").replace("[ERROR] ", "")
    return {"mro": [c.__name__ for c in type(exc).__mro__], "message": message}


def main(side, workdir):
    if side == "mindspore":
        import mindspore.mindrecord as mr
    else:
        import recordio.mindrecord as mr
    os.chdir(workdir)
    out = {}
    for name, case in make_cases(mr).items():
        raised = None
        try:
            case(name)
        except Exception as exc:  # the case's outcome is what is recorded
            raised = exc
        out[name] = describe(raised)
    json.dump({"faults": out, "behaviour": behaviour(mr)}, sys.stdout, indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
