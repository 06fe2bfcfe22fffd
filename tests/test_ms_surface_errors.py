"""Errors where MindSpore's scripts check them (issue 35, section 5), compared with MindSpore 2.10.

The same cases (:data:`CASES`, plain Python source) run under MindSpore 2.10 and under recordio, each
in its own folder; every case gives ``["ok", value]`` or ``["error", is_runtime_error, message]``.
recordio must raise where MindSpore raises, an exception ``except RuntimeError`` catches, whose
message starts with MindSpore's whole sentence (recordio may add detail after it).
"""

import json
import os
import stat
import subprocess

import numpy as np
import pytest

import recordio
from recordio.errors import FormatError, SchemaError
from recordio.mindrecord import FileReader, FileWriter, MindPage, count_rows, encryption, set_enc_key

KEY = "abcdefghijklmnop"

CASES = r'''
import os, numpy as np

SCHEMA = {"a": {"type": "int32"}, "b": {"type": "bytes"}}


def write(path, n=4, shards=1, schema=SCHEMA, rows=None):
    fw = FileWriter(path, shards)
    fw.add_schema(schema, "d")
    fw.write_raw_data(rows or [{"a": i, "b": b"x"} for i in range(n)])
    fw.commit()


def run(name, f, out):
    try:
        out[name] = ["ok", f()]
    except Exception as e:
        out[name] = ["error", isinstance(e, RuntimeError), str(e)]


def rows_of(path, columns=None):
    return [int(r[0]) for r in MindDataset(path, columns_list=columns, shuffle=False)
            .create_tuple_iterator(output_numpy=True)]


def cases(folder):
    out = {}
    enc = os.path.join(folder, "enc.mindrecord")
    set_enc_key(KEY)
    write(enc)
    run("encrypted, key set: read", lambda: rows_of(enc), out)
    run("encrypted, key set: two shards", lambda: write(os.path.join(folder, "two.mindrecord"), shards=2), out)
    set_enc_key(None)
    run("encrypted, no key: FileReader", lambda: FileReader(enc).len(), out)
    run("encrypted, no key: MindDataset", lambda: rows_of(enc), out)
    run("encrypted, no key: open_for_append", lambda: FileWriter.open_for_append(enc) and "opened", out)
    plain_first = os.path.join(folder, "plain_first.mindrecord")
    write(plain_first)
    set_enc_key(KEY)
    run("key set: open_for_append of a plain file", lambda: FileWriter.open_for_append(plain_first) and "opened", out)
    set_enc_key(KEY[::-1])
    run("wrong key: open_for_append", lambda: FileWriter.open_for_append(enc) and "opened", out)
    run("wrong key: FileReader", lambda: FileReader(enc).len(), out)
    set_enc_key(None)
    empty = os.path.join(folder, "empty.mindrecord")
    open(empty, "wb").close()
    run("empty: FileReader", lambda: FileReader(empty).len(), out)
    run("empty: MindDataset", lambda: MindDataset(empty) and "built", out)

    def parallel(first):
        fw = FileWriter(os.path.join(folder, f"par{first}.mindrecord"), 1)
        fw.add_schema(SCHEMA, "d")
        fw.write_raw_data([{"a": 1, "b": b"x"}], parallel_writer=first)
        fw.write_raw_data([{"a": 2, "b": b"x"}], parallel_writer=not first)
    run("parallel_writer True then False", lambda: parallel(True), out)
    run("parallel_writer False then True", lambda: parallel(False), out)

    plain = os.path.join(folder, "plain.mindrecord")
    write(plain)
    built = []
    run("columns_list unknown: construct", lambda: built.append(MindDataset(plain, columns_list=["a", "zz"]))
        or "built", out)
    if built:
        run("columns_list unknown: get_dataset_size", built[0].get_dataset_size, out)
        run("columns_list unknown: iterate", lambda: [r for r in built[0].create_tuple_iterator()], out)
        run("columns_list unknown: get_col_names", built[0].get_col_names, out)

    arr = {"a": {"type": "int32", "shape": [2]}}
    for dtype in ("int64", "int16", "uint32"):
        run(f"{dtype} array into int32", lambda: write(os.path.join(folder, dtype + ".mindrecord"), schema=arr,
                                                       rows=[{"a": np.array([1, 2], dtype)}]), out)
    arr64 = {"a": {"type": "int64", "shape": [2]}}
    run("int32 array into int64", lambda: write(os.path.join(folder, "i32.mindrecord"), schema=arr64,
                                                rows=[{"a": np.array([1, 2], "int32")}]), out)
    return out
'''

MS_SCRIPT = r'''
import json, sys
from mindspore.dataset import MindDataset
from mindspore.mindrecord import FileReader, FileWriter
from mindspore.mindrecord.config import set_enc_key
FileReader.len = FileReader.len_of = lambda self: sum(1 for _ in self.get_next())
KEY = sys.argv[2]
exec(sys.argv[3])
print("RESULT" + json.dumps(cases(sys.argv[1])))
'''


def ours(folder):
    space = {"FileWriter": FileWriter, "FileReader": FileReader, "MindDataset": recordio.MindDataset,
             "set_enc_key": set_enc_key, "KEY": KEY}
    FileReader.len = lambda self: len(self)
    try:
        exec(CASES, space)
        return space["cases"](str(folder))
    finally:
        del FileReader.len
        set_enc_key(None)


def theirs(python, folder):
    done = subprocess.run([python, "-c", MS_SCRIPT, str(folder), KEY, CASES], capture_output=True, text=True,
                          timeout=300)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT")]
    assert lines, done.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT"):])


def _core(message):
    """MindSpore's sentence inside its pipeline banner (``[ERROR] ...``), else the message."""
    if "[ERROR] " in message:
        return message.split("[ERROR] ", 1)[1].split("\n", 1)[0]
    return message


@pytest.mark.mindspore
@pytest.mark.slow
def test_errors_as_mindspore_raises_them(tmp_path, mindspore_python):
    (tmp_path / "ms").mkdir()
    (tmp_path / "rio").mkdir()
    want = theirs(mindspore_python, tmp_path / "ms")
    got = ours(tmp_path / "rio")
    assert set(got) == set(want)
    for name, theirs_case in want.items():
        mine = got[name]
        assert mine[0] == theirs_case[0], (name, mine, theirs_case)
        if mine[0] == "ok":
            assert mine == theirs_case, name
            continue
        assert mine[1] and theirs_case[1], (name, "not a RuntimeError", mine, theirs_case)
        message = theirs_case[2].replace(str(tmp_path / "ms"), str(tmp_path / "rio"))
        if name.startswith("columns_list"):          # the same sentence up to the parameter's name
            assert _core(message).split(" Please")[0] in mine[2], name
        elif "array into" in name:                   # MindSpore: a warning per row, then "no valid data"
            sentence = "There is no valid data which can be written by 'write_raw_data' to mindrecord file."
            assert sentence in message and sentence in mine[2] and "row 0: field 'a': expected dtype" in mine[2]
        else:
            assert mine[2].startswith(message), (name, mine[2], message)


def write(path, rows=None, schema=None):
    with FileWriter(str(path)) as fw:
        fw.add_schema(schema or {"a": {"type": "int32"}, "b": {"type": "bytes"}}, "d")
        fw.write_raw_data(rows or [{"a": i, "b": b"x"} for i in range(4)])


def test_an_empty_file_gives_mindsporess_size_error(tmp_path):
    empty = tmp_path / "e.mindrecord"
    empty.write_bytes(b"")
    for read in (FileReader, recordio.MindDataset):
        with pytest.raises(FormatError, match=r"^Invalid file, the size of mindrecord file: 0 is smaller than "
                                              r"the lower limit: 8\.\n Please check file path: .*e\.mindrecord "
                                              r"and use 'FileWriter' to generate valid mindrecord files\.$"):
            read(str(empty))


def test_an_encrypted_file_without_key_says_so_not_header_size(tmp_path):
    path = tmp_path / "enc.mindrecord"
    set_enc_key(KEY)
    try:
        write(path)
    finally:
        set_enc_key(None)
    for read in (FileReader, recordio.MindDataset, FileWriter.open_for_append, MindPage, count_rows):
        with pytest.raises(FormatError, match=r"^The mindrecord file is encrypted\. You need to configure") as info:
            read(str(path))
        assert "header" not in str(info.value)
    report = recordio.verify(str(path))
    assert [p for _, p in report.problems] == [f"{encryption._ENCRYPTED} ({path})"]


def test_decrypted_copies_live_in_a_private_decrypt_mindrecord_folder(tmp_path):
    path = tmp_path / "enc.mindrecord"
    set_enc_key(KEY)
    try:
        write(path)
        reader = FileReader(str(path))
        root = tmp_path / ".decrypt_mindrecord"
        folder = reader._plain.folder
        assert os.path.dirname(folder) == str(root)
        assert stat.S_IMODE(os.stat(root).st_mode) == 0o700 and stat.S_IMODE(os.stat(folder).st_mode) == 0o700
        assert sorted(os.listdir(folder)) == ["enc.mindrecord", "enc.mindrecord.db"]
        other = FileReader(str(path))                  # a second reader: a folder of its own
        assert other._plain.folder != folder
        reader.close()
        assert not os.path.exists(folder) and root.is_dir()
        assert [int(r["a"]) for r in other.get_next()] == [0, 1, 2, 3]
        other.close()
        assert not root.exists()                       # the last one out removes MindSpore's folder
    finally:
        set_enc_key(None)


def test_decrypted_copies_fall_back_to_a_temporary_folder_when_the_link_is_not_ours(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "data").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "data" / ".decrypt_mindrecord")
    folder, root = encryption._private_folder(str(tmp_path / "data"))
    try:
        assert root is None and not folder.startswith(str(tmp_path))
        assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    finally:
        os.rmdir(folder)


def test_unknown_column_is_reported_when_the_pipeline_runs(tmp_path):
    path = tmp_path / "p.mindrecord"
    write(path)
    dataset = recordio.MindDataset(str(path), columns_list=["a", "zz"])   # as MindSpore: built
    assert dataset.get_dataset_size() == 4                                 # and counted
    with pytest.raises(RuntimeError, match="column name: zz can not found in schema"):
        for _ in dataset.create_tuple_iterator():
            pass
    with pytest.raises(SchemaError, match="column name: zz"):
        dataset.get_col_names()
    with pytest.raises(SchemaError, match="column name: zz"):
        FileReader(str(path), columns=["zz"])              # FileReader (MindSpore too) refuses at once


@pytest.mark.parametrize("dtype,field", [(np.int64, "int32"), (np.int32, "int64"), (np.uint32, "int64"),
                                         (np.float64, "float32")])
def test_an_array_of_another_dtype_is_refused_naming_row_field_and_dtypes(tmp_path, dtype, field):
    with FileWriter(str(tmp_path / "x.mindrecord")) as fw:
        fw.add_schema({"a": {"type": field, "shape": [2]}}, "d")
        fw.write_raw_data([{"a": np.array([1, 2], getattr(np, field))}])
        with pytest.raises(SchemaError, match=rf"^row 1: field 'a': expected dtype {field}, found "
                                              rf"{np.dtype(dtype).name}; cast it with \.astype\(np\.{field}\)\. There is no valid data "
                                              rf"which can be written by 'write_raw_data' to mindrecord file\. "
                                              rf"Nothing of this call is written\.$"):
            fw.write_raw_data([{"a": np.array([3, 4], getattr(np, field))}, {"a": np.array([1, 2], dtype)}])
    assert [r["a"].tolist() for r in FileReader(str(tmp_path / "x.mindrecord"))] == [[1, 2]]


def test_mindspore_sentences_for_sharded_encryption_and_parallel_writer(tmp_path):
    set_enc_key(KEY)
    try:
        with pytest.raises(RuntimeError, match=r"^When encode mode is enabled, the automatic sharding function is "
                                               r"unavailable\. "):
            FileWriter(str(tmp_path / "s.mindrecord"), 2)
    finally:
        set_enc_key(None)
    fw = FileWriter(str(tmp_path / "p.mindrecord"))
    fw.add_schema({"a": {"type": "int32"}}, "d")
    fw.write_raw_data([{"a": 1}], parallel_writer=True)
    with pytest.raises(RuntimeError, match=r"^The parameter `parallel_writer` must be consistent during use\. "):
        fw.write_raw_data([{"a": 2}], parallel_writer=False)
