"""recordio.mindrecord as mindspore.mindrecord: names, exception types and wording, MindPage, reader lifetime.

The same cases (``tests/mindspore_faults.py``) run on recordio and, in the ``mindspore`` tier, on
MindSpore 2.10; without MindSpore they are compared with MindSpore's answers carried in
``tests/golden/mindspore_compat.json`` (written by that script under MindSpore 2.10).
"""

import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import recordio.errors as errors
import recordio.mindrecord as mr

HERE = pathlib.Path(__file__).resolve().parent
SCRIPT = HERE / "mindspore_faults.py"
CARRIED = HERE / "golden" / "mindspore_compat.json"

MINDSPORE_ALL = ["Cifar100ToMR", "Cifar10ToMR", "CsvToMR", "FAILED", "FileReader", "FileWriter", "ImageNetToMR",
                 "MindPage", "MnistToMR", "SUCCESS", "TFRecordToMR", "set_dec_mode", "set_enc_key", "set_enc_mode"]
RECORDIO_ADDITIONS = {"FixedLenFeature", "ShardWriter", "cache_info", "clear_cache", "count_elements", "count_rows",
                      "count_where", "describe", "finalize_shards", "missing_shards", "verify"}
CONVERTERS = {"Cifar100ToMR", "Cifar10ToMR", "CsvToMR", "ImageNetToMR", "MnistToMR", "TFRecordToMR"}

# Cases where recordio deliberately differs from MindSpore 2.10, with the reason (docs/porting.md).
TYPE_DIVERGENCES = {
    "reader_num_consumer_huge": "num_consumer is not capped at the CPU count: recordio's reader starts no "
                                "consumer threads (MindSpore's default of 4 fails on a 2-CPU machine)",
    "schema_bad_shape": "every invalid schema raises MRMInvalidSchemaError (a SchemaError); MindSpore raises "
                        "MRMBuildSchemaError for a zero in a shape",
}
WORDING_DIVERGENCES = {
    "write_unknown_field_only": "recordio raises for the bad row, naming row and field; MindSpore drops rows "
                                "silently and complains only when none is left",
    "write_bad_type": "same as write_unknown_field_only",
    "commit_twice": "MindSpore fails inside its C++ writer ('Failed to seekp file')",
    "reader_missing_everything": "MindSpore's message comes from its decryption step",
    "reader_invalid_file": "MindSpore looks for the .db first; recordio reads the data file's header first",
    "reader_num_consumer_huge": TYPE_DIVERGENCES["reader_num_consumer_huge"],
    "schema_bad_shape": TYPE_DIVERGENCES["schema_bad_shape"],
    "schema_type_str": "recordio's detail lists the valid types", "schema_type_np_int32": "as schema_type_str",
    "schema_not_dict": "recordio's detail shows what was found",
    "page_past_end": "MindSpore's message lacks a space ('page no: 5or page size'); recordio's has it",
    "reader_missing_db": "recordio names the .db by its absolute path",
}


def run_cases(python, side, workdir):
    workdir.mkdir()
    done = subprocess.run([python, str(SCRIPT), side, str(workdir)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.replace(str(workdir), "<workdir>"))


@pytest.fixture(scope="module")
def recordio_answers(tmp_path_factory):
    return run_cases(sys.executable, "recordio", tmp_path_factory.mktemp("rio") / "work")


@pytest.fixture(scope="module")
def carried():
    return json.loads(CARRIED.read_text())


# --- names --------------------------------------------------------------------------------------

def test_all_holds_mindsporess_names_and_recordio_additions():
    ours = set(mr.__all__)
    assert set(MINDSPORE_ALL) - ours <= CONVERTERS - ours     # converter classes may land separately
    assert ours - set(MINDSPORE_ALL) == RECORDIO_ADDITIONS
    assert mr.__all__ == sorted(mr.__all__)


def test_mindspore_exception_names_are_importable_and_related():
    for name in errors.MINDSPORE_EXCEPTIONS:
        cls = getattr(mr, name)
        assert issubclass(cls, errors.MindRecordException) and issubclass(cls, errors.RecordIOError)
    assert issubclass(mr.ParamValueError, ValueError) and issubclass(mr.ParamTypeError, TypeError)
    assert issubclass(mr.MRMInvalidSchemaError, errors.SchemaError)
    for cls in (errors.DatasetExistsError, errors.MissingFileError, errors.IndexFileError, errors.FormatError,
                errors.SchemaError, errors.CategoryError):
        assert issubclass(cls, RuntimeError), cls          # MindSpore raises RuntimeError at these sites
    assert str(mr.ParamTypeError("raw_data", "list")) == "[ParamTypeError]: Invalid parameter type. 'raw_data' " \
                                                         "expect list type."
    assert mr.MRMGetMetaError().error_code == 1347690610      # MindSpore 2.10's value
    assert mr.SUCCESS == 0 and mr.FAILED == 1


@pytest.mark.mindspore
def test_names_equal_mindsporess(mindspore_python):
    code = ("import inspect, json, mindspore.mindrecord as m, mindspore.mindrecord.common.exceptions as e;"
            "print(json.dumps([sorted(m.__all__), sorted(n for n, c in vars(e).items() "
            "if inspect.isclass(c) and issubclass(c, Exception))]))")
    done = subprocess.run([mindspore_python, "-c", code], capture_output=True, text=True, timeout=300)
    names, exceptions = json.loads(done.stdout.strip().splitlines()[-1])
    assert names == MINDSPORE_ALL
    assert exceptions == errors.MINDSPORE_EXCEPTIONS


# --- faults: exception types and wording ---------------------------------------------------------------

def _key_phrase(message):
    """The part of MindSpore's message a script would match: before any path, detail or second line."""
    text = message.split("]: ", 1)[-1]
    for cut in ("<workdir>", "Detail:", "\n", " Please check file path", "{"):
        text = text.split(cut)[0]
    return text.strip()[:60]


def compare_faults(expected, found):
    wrong = []
    for case, theirs in expected.items():
        ours = found[case]
        if case in TYPE_DIVERGENCES and case in WORDING_DIVERGENCES:
            continue
        if (theirs is None) != (ours is None):
            wrong.append((case, "raised" if ours else "did not raise"))
            continue
        if theirs is None:
            continue
        caught = theirs["mro"][0]                     # MindSpore's class: an except clause for it catches ours
        if case not in TYPE_DIVERGENCES and caught not in ours["mro"]:
            wrong.append((case, f"{caught} not in {ours['mro']}"))
        if case not in WORDING_DIVERGENCES and _key_phrase(theirs["message"]) not in ours["message"]:
            wrong.append((case, f"{_key_phrase(theirs['message'])!r} not in {ours['message']!r}"))
    assert not wrong, "\n".join(f"{c}: {w}" for c, w in wrong)


@pytest.mark.slow
def test_faults_as_mindspore_raises_them(recordio_answers, carried):
    compare_faults(carried["faults"], recordio_answers["faults"])


def test_behaviour_as_mindspore(recordio_answers, carried):
    assert recordio_answers["behaviour"] == carried["behaviour"]


@pytest.mark.mindspore
def test_against_mindspore_itself(mindspore_python, recordio_answers, tmp_path):
    theirs = run_cases(mindspore_python, "mindspore", tmp_path / "ms")
    compare_faults(theirs["faults"], recordio_answers["faults"])
    assert recordio_answers["behaviour"] == theirs["behaviour"]


# --- MindPage and the reader's lifetime, on recordio's own ----------------------------------------------

@pytest.fixture()
def dataset(tmp_path):
    path = str(tmp_path / "page.mindrecord")
    with mr.FileWriter(path, 3) as writer:
        writer.add_schema({"name": {"type": "string"}, "label": {"type": "int32"}, "w": {"type": "float64"},
                           "img": {"type": "bytes"}}, "pages")
        writer.add_index(["name", "label", "w"])
        writer.write_raw_data([{"name": f"n{i % 3}", "label": i % 11, "w": i / 4, "img": bytes([i])}
                               for i in range(40)])
    return path


def test_mindpage_groups_rows_by_text_of_the_value(dataset):
    page = mr.MindPage(dataset + "0")
    assert page.candidate_fields == page.get_category_fields() == ["name", "label", "w"]
    assert page.set_category_field("label") == mr.SUCCESS
    info = json.loads(page.read_category_info())
    assert info["key"] == "label_0"
    assert [c["name"] for c in info["categories"]] == sorted(str(v) for v in range(11))   # text order: "10" < "2"
    assert [c["id"] for c in info["categories"]] == list(range(11))
    assert sum(c["count"] for c in info["categories"]) == 40
    rows = page.read_at_page_by_name("10", 0, 100)
    assert [int(r["label"]) for r in rows] == [10, 10, 10]
    assert [r["img"] for r in rows] == [bytes([10]), bytes([21]), bytes([32])]           # dataset order
    assert [r["img"] for r in page.read_at_page_by_name("10", 1, 2)] == [bytes([32])]
    assert page.read_at_page_by_id(2, 0, 1)[0]["label"] == 10                             # id 2 is "10"


def test_mindpage_float_names_and_errors(dataset):
    page = mr.MindPage(dataset + "0")
    page.category_field = "w"
    assert page.read_at_page_by_name("2.5", 0, 1)[0]["img"] == bytes([10])
    assert page.read_at_page_by_name("3", 0, 1)[0]["img"] == bytes([12])                  # "3" finds "3.0"
    with pytest.raises(errors.CategoryError, match="could not found"):
        page.read_at_page_by_name("3.1", 0, 1)
    with pytest.raises(RuntimeError, match=r"category_id: 40 must be in the range \[0, 40\]"):
        page.read_at_page_by_id(40, 0, 1)
    with pytest.raises(RuntimeError, match="page no: 1"):
        page.read_at_page_by_id(0, 1, 1)
    with pytest.raises(mr.ParamValueError):
        page.read_at_page_by_id(0, True, 1)
    with pytest.raises(mr.MRMDefineCategoryError):
        page.category_field = "img"


def test_get_next_is_one_pass_and_close_ends_it(dataset):
    reader = mr.FileReader(dataset + "1")
    stream = reader.get_next()
    first = [next(stream)["img"] for _ in range(3)]
    rest = [r["img"] for r in reader.get_next()]                 # a second call continues the same pass
    assert first + rest == [reader[i]["img"] for i in range(40)]
    assert list(reader.get_next()) == []
    assert len(list(reader)) == 40                               # iteration is a fresh pass
    reader.close()
    reader.close()
    assert list(reader.get_next()) == [] and len(reader) == 40
    with pytest.raises(ValueError, match="closed FileReader"):
        reader[0]


def test_close_in_the_middle_of_a_get_next_loop_ends_it(dataset):
    reader = mr.FileReader(dataset + "0")
    seen = 0
    for _ in reader.get_next():
        seen += 1
        if seen == 7:
            reader.close()
    assert seen == 7


def test_write_checks_as_mindspore(tmp_path):
    writer = mr.FileWriter(str(tmp_path / "w"))
    writer.add_schema({"a": {"type": "int32", "shape": [-1]}}, "x")
    with pytest.raises(RuntimeError, match="There is no valid data"):
        writer.write_raw_data([])
    with pytest.raises(errors.SchemaError, match="row 0: field 'a': expected dtype int32, found int64"):
        writer.write_raw_data([{"a": np.array([1, 2, 3])}])  # numpy's int64, even holding int32 values: refused
    writer.write_raw_data([{"a": np.array([1, 2, 3], np.int32)}])
    writer.commit()
    assert mr.FileReader(str(tmp_path / "w"))[0]["a"].dtype == np.int32


def test_a_db_that_disagrees_with_its_data_is_refused_by_mindpage_and_query(dataset, capsys):
    import sqlite3

    from recordio.tools.__main__ import main

    db = dataset + "0.db"
    conn = sqlite3.connect(db)
    conn.execute("UPDATE INDEXES SET label_0 = 99 WHERE ROW_ID = 2")      # row 2 holds label 2
    conn.commit()
    conn.close()
    page = mr.MindPage(dataset + "0")
    page.category_field = "label"
    with pytest.raises(errors.IndexFileError, match=r"ROW_ID 2 is indexed with label = '99' but its data file "
                                                    r"holds 2"):
        page.read_at_page_by_name("99", 0, 5)
    assert [int(r["label"]) for r in page.read_at_page_by_name("3", 0, 5)] == [3, 3, 3, 3]
    assert main(["query", dataset + "0", "--where", "label=99"]) == 1
    assert "disagrees with its data file" in capsys.readouterr().err
