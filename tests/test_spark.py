"""recordio.spark on a local pyspark (``local[2,3]``: two cores, a task retried up to twice).

The JVM starts once for the module (a session fixture, ~25 s on two cores), so the Spark tests are
few and marked ``slow``; the type mapping and the publication of task attempts are tested without it.
"""

import os
import shutil
import sys

import numpy as np
import pytest
from bridge_data import SCHEMA, read, same, write_dataset
from ms_client import run_oracle
from ms_oracle import from_plain

import recordio
from recordio.errors import SchemaError

pytest.importorskip("pyspark", reason="the spark extra is not installed (pip install 'mindrecordio[spark]')")
import pyarrow as pa  # noqa: E402
from pyspark.sql import types as T  # noqa: E402

from recordio.spark import read_mindrecord, write_mindrecord  # noqa: E402
from recordio.spark.types import mindrecord_schema, spark_schema, to_writer_row  # noqa: E402
from recordio.spark.write import WriteTask, _publish, attempts_dir  # noqa: E402


@pytest.fixture(scope="session")
def spark():
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no Java runtime (java on PATH or JAVA_HOME): pyspark cannot start")
    from pyspark.sql import SparkSession

    os.environ.update(SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    session = (SparkSession.builder.master("local[2,3]").appName("recordio-tests")
               .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.driver.memory", "512m").config("spark.sql.shuffle.partitions", "4")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return write_dataset(tmp_path_factory.mktemp("spark") / "all.mindrecord", n=40, shard_num=4)


ALL_TYPES = T.StructType([
    T.StructField("b", T.ByteType()), T.StructField("s", T.ShortType()), T.StructField("i", T.IntegerType()),
    T.StructField("l", T.LongType()), T.StructField("f", T.FloatType()), T.StructField("d", T.DoubleType()),
    T.StructField("t", T.StringType()), T.StructField("raw", T.BinaryType()),
    T.StructField("ids", T.ArrayType(T.LongType())), T.StructField("xy", T.ArrayType(T.ArrayType(T.IntegerType()))),
])
ALL_SCHEMA = {"b": {"type": "int32"}, "s": {"type": "int32"}, "i": {"type": "int32"}, "l": {"type": "int64"},
              "f": {"type": "float32"}, "d": {"type": "float64"}, "t": {"type": "string"}, "raw": {"type": "bytes"},
              "ids": {"type": "int64", "shape": [-1]}, "xy": {"type": "int32", "shape": [-1, 2]}}


def all_types_rows(n):
    rng = np.random.default_rng(1)
    return [(int(rng.integers(-128, 128)), int(rng.integers(-2**15, 2**15)), int(rng.integers(-2**31, 2**31)),
             int(rng.integers(-2**62, 2**62)), float(np.float32(rng.standard_normal())), float(rng.standard_normal()),
             f"text {k} ü", bytearray(rng.integers(0, 256, k % 5, np.uint8).tobytes()),
             rng.integers(-9, 9, k % 4).tolist(), rng.integers(0, 99, (k % 3, 2)).tolist()) for k in range(n)]


def test_spark_types_give_the_mindrecord_schema():
    assert mindrecord_schema(ALL_TYPES, {"xy": [[1, 2], [3, 4], [5, 6]]}) == ALL_SCHEMA
    cube = T.StructType([T.StructField("c", T.ArrayType(T.ArrayType(T.ArrayType(T.FloatType()))))])
    assert mindrecord_schema(cube, {"c": np.zeros((5, 2, 3)).tolist()}) == {"c": {"type": "float32",
                                                                                  "shape": [-1, 2, 3]}}
    back = spark_schema({"m": {"type": "float32", "shape": [2, 3]}, "n": {"type": "int64"}})
    assert back.simpleString() == "struct<m:array<array<float>>,n:bigint>"


@pytest.mark.parametrize("data_type", [T.BooleanType(), T.DecimalType(10, 2), T.DateType(), T.TimestampType(),
                                       T.ArrayType(T.StringType()), T.MapType(T.StringType(), T.LongType()),
                                       T.StructType([T.StructField("x", T.LongType())])])
def test_a_type_mindrecord_cannot_hold_is_refused_naming_the_column(data_type):
    struct = T.StructType([T.StructField("ok", T.LongType()), T.StructField("odd", data_type)])
    with pytest.raises(SchemaError, match=r"column 'odd': Spark type " + data_type.simpleString().replace("(", r"\(")
                       .replace(")", r"\)")):
        mindrecord_schema(struct)


def test_a_nested_array_needs_a_fixed_inner_shape():
    struct = T.StructType([T.StructField("xy", T.ArrayType(T.ArrayType(T.IntegerType())))])
    with pytest.raises(SchemaError, match="'xy'.*ragged"):
        mindrecord_schema(struct, {"xy": [[1, 2], [3]]})
    with pytest.raises(SchemaError, match="'xy'.*no row"):
        mindrecord_schema(struct, {})


def test_row_values_are_checked_not_cast():
    spec = {"ids": {"type": "int32", "shape": [-1]}}
    assert to_writer_row({"ids": [1, 2]}, spec)["ids"].dtype == np.int32
    assert to_writer_row({"xy": []}, {"xy": {"type": "int32", "shape": [-1, 2]}})["xy"].shape == (0, 2)
    assert type(to_writer_row({"raw": bytearray(b"x")}, {"raw": {"type": "bytes"}})["raw"]) is bytes
    with pytest.raises(SchemaError, match="'ids'.*float64"):
        to_writer_row({"ids": [1.5]}, spec)
    with pytest.raises(SchemaError, match="'ids'.*range of int32"):
        to_writer_row({"ids": [2**40]}, spec)


def test_a_duplicate_attempt_is_never_published(tmp_path):
    """A speculative duplicate of a partition writes its own part; only the reported attempt's part is used."""
    path = str(tmp_path / "dup.mindrecord")
    schema = {"n": {"type": "int64"}}
    os.makedirs(attempts_dir(path))
    task = WriteTask(path, 2, schema, ["n"], None, None)
    results = []
    for shard, attempt, rows in [(0, 7, range(0, 5)), (0, 8, range(0, 5)), (1, 9, range(5, 9)), (1, 10, [99])]:
        folder = task.attempt_folder(shard, attempt)
        written = task.write(shard, folder, [pa.RecordBatch.from_pylist([{"n": n} for n in rows])])
        if attempt in (8, 9):                                 # Spark reports one successful attempt a partition
            results.append({"shard": shard, "attempt": folder, "rows": written})
    _publish(results, path, 2, schema, ["n"], None, overwrite=False)
    assert [int(r["n"]) for r in read(path + "0")] == list(range(9))
    shutil.rmtree(attempts_dir(path))
    assert sorted(os.listdir(tmp_path)) == ["dup.mindrecord0", "dup.mindrecord0.db", "dup.mindrecord1",
                                            "dup.mindrecord1.db"]


ALL_ARROW = pa.schema([("b", pa.int8()), ("s", pa.int16()), ("i", pa.int32()), ("l", pa.int64()), ("f", pa.float32()),
                       ("d", pa.float64()), ("t", pa.string()), ("raw", pa.binary()), ("ids", pa.list_(pa.int64())),
                       ("xy", pa.list_(pa.list_(pa.int32())))])


def task_files(tmp_path, name, batches, row_fn=None, schema=ALL_SCHEMA):
    """The part one write task makes of ``batches`` (Arrow), as bytes: as columns, or as rows (``row_fn``)."""
    path = str(tmp_path / name / "part.mindrecord")
    os.makedirs(attempts_dir(path))
    task = WriteTask(path, 1, schema, ["l"] if "l" in schema else [], None, row_fn)
    folder = task.attempt_folder(0, 1)
    task.write(0, folder, batches)
    part = os.path.join(folder, ".part.mindrecord.rio-parts", "shard-00000.mindrecord")
    return [open(part + suffix, "rb").read() for suffix in ("", ".db")]


def test_the_write_task_writes_columns_as_it_writes_rows(tmp_path, monkeypatch):
    """Arrow batches handed over as columns give the bytes of the same rows through the row path."""
    monkeypatch.setattr("recordio.spark.write.CHUNK_ROWS", 16)                # chunks across batch ends
    table = pa.Table.from_pylist([dict(zip(ALL_TYPES.names, r)) for r in all_types_rows(90)], ALL_ARROW)
    batches = table.to_batches(max_chunksize=40) + [table.slice(70).to_batches()[0]]   # an offset slice too
    by_columns = task_files(tmp_path, "columns", batches)
    assert by_columns == task_files(tmp_path, "rows", batches, row_fn=lambda row: row.asDict())


@pytest.mark.parametrize("column,value,message", [
    ("i", None, r"row 1: field 'i': expected int or np.int32 .* found NoneType None"),
    ("raw", None, r"row 1: field 'raw': expected bytes .* found NoneType None"),
    ("t", None, r"row 1: field 't': expected str .* found NoneType None"),
    ("ids", None, r"row 1: field 'ids': expected np.ndarray of int64 .* found NoneType None"),
    ("xy", [[1, 2, 3]], r"row 1: field 'xy': expected shape \[-1, 2\], found shape \[1, 3\]"),
])
def test_a_bad_value_in_a_batch_is_named_by_partition_row_and_field(tmp_path, column, value, message):
    rows = [dict(zip(ALL_TYPES.names, r)) for r in all_types_rows(3)]
    rows[1][column] = value
    batch = pa.RecordBatch.from_pylist(rows, ALL_ARROW)
    with pytest.raises(SchemaError, match=r"part.mindrecord: partition 0, rows 0..2: " + message):
        task_files(tmp_path, "bad", [batch])


def collected(df):
    return [row.asDict() for row in df.collect()]


def as_lists(rows):
    """FileReader rows as Spark gives them: arrays as nested lists, numbers as Python numbers."""
    return [{k: v.tolist() if isinstance(v, (np.ndarray, np.generic)) else v for k, v in r.items()} for r in rows]


@pytest.mark.slow
def test_read_equals_the_file_reader_and_writes_back(spark, dataset, tmp_path):
    df = read_mindrecord(spark, dataset, num_partitions=6)             # more partitions than the 4 shards
    assert df.rdd.getNumPartitions() == 6
    assert dict(df.dtypes) == {"i32": "int", "i64": "bigint", "f32": "float", "f64": "double", "text": "string",
                               "blob": "binary", "matrix": "array<array<float>>", "ids": "array<bigint>",
                               "points": "array<array<int>>", "vector": "array<double>"}
    assert collected(df) == as_lists(read(dataset))
    assert collected(read_mindrecord(spark, dataset, ["text", "i32"])) == as_lists(
        recordio.FileReader(dataset, columns=["text", "i32"]))
    out = str(tmp_path / "back.mindrecord")
    assert write_mindrecord(df, out, schema=SCHEMA, shard_num=3, index_fields=["i64"]) == 40
    same(read(out + "0"), read(dataset))
    counts = recordio.FileReader(out + "0").file_row_counts          # a range shuffle: sizes from a sample
    assert len(counts) == 3 and sum(counts) == 40 and min(counts) > 0
    assert recordio.FileReader(out + "0").index_fields == ["i64"] and recordio.verify(out + "0").ok
    inferred = str(tmp_path / "inferred.mindrecord")                    # the schema from Spark's types
    write_mindrecord(df, inferred)
    assert recordio.FileReader(inferred + "0").schema["matrix"] == {"type": "float32", "shape": [-1, 3]}
    assert as_lists(read(inferred + "0")) == as_lists(read(dataset))


@pytest.mark.slow
def test_every_spark_type_round_trips(spark, tmp_path):
    rows = all_types_rows(30)
    df = spark.createDataFrame(rows, ALL_TYPES).repartition(1).repartition(3)  # 3 partitions, any order
    out = str(tmp_path / "types.mindrecord")
    write_mindrecord(df, out, index_fields=["l"])
    assert recordio.FileReader(out + "0").schema == ALL_SCHEMA
    mine = sorted(as_lists(read(out + "0")), key=lambda r: r["t"])
    want = sorted([dict(zip(ALL_TYPES.names, r)) for r in rows], key=lambda r: r["t"])
    for r in want:
        r["raw"] = bytes(r["raw"])
    assert mine == want
    back = collected(read_mindrecord(spark, out + "0"))
    assert sorted(back, key=lambda r: r["t"]) == want


@pytest.mark.slow
def test_a_dataframe_written_as_columns_is_the_one_written_as_rows(spark, tmp_path):
    df = spark.createDataFrame(all_types_rows(60), ALL_TYPES)
    for how, row_fn in (("columns", None), ("rows", lambda row: row.asDict())):
        os.makedirs(tmp_path / how)
        write_mindrecord(df, str(tmp_path / how / "t.mindrecord"), schema=ALL_SCHEMA, row_fn=row_fn, shard_num=3,
                         index_fields=["l", "t"])
    for name in sorted(os.listdir(tmp_path / "rows")):
        assert (tmp_path / "columns" / name).read_bytes() == (tmp_path / "rows" / name).read_bytes(), name
    wide = spark.createDataFrame([(1,), (2**40,)], "x long").coalesce(1)
    with pytest.raises(Exception, match=r"partition 0, rows 0..1: row 1: field 'x': expected an int32 in"):
        write_mindrecord(wide, str(tmp_path / "wide.mindrecord"), schema={"x": {"type": "int32"}})


@pytest.mark.slow
def test_row_fn_runs_on_the_executors_and_a_bad_column_is_refused(spark, tmp_path):
    df = spark.createDataFrame([(f"w{i} w{i + 1}", i) for i in range(20)], "line string, label int")

    def tokenize(row):
        return {"ids": np.array([int(w[1:]) for w in row.line.split()], np.int64), "label": row.label}

    out = str(tmp_path / "tok.mindrecord")
    schema = {"ids": {"type": "int64", "shape": [-1]}, "label": {"type": "int32"}}
    write_mindrecord(df, out, schema=schema, row_fn=tokenize, shard_num=4)
    assert [(r["ids"].tolist(), int(r["label"])) for r in read(out + "0")] == [([i, i + 1], i) for i in range(20)]
    with pytest.raises(Exception, match=r"null.mindrecord: partition 0, rows 0..1: .*'label'"):   # no nulls
        write_mindrecord(spark.createDataFrame([(1,), (None,)], "label int").coalesce(1),
                         str(tmp_path / "null.mindrecord"))
    with pytest.raises(SchemaError, match="column 'flag': Spark type boolean"):
        write_mindrecord(df.selectExpr("label", "label > 3 AS flag"), str(tmp_path / "bool.mindrecord"))
    with pytest.raises(SchemaError, match="needs schema="):
        write_mindrecord(df, str(tmp_path / "fn.mindrecord"), row_fn=tokenize)
    assert sorted(os.listdir(tmp_path)) == ["tok.mindrecord0", "tok.mindrecord0.db", "tok.mindrecord1",
                                            "tok.mindrecord1.db", "tok.mindrecord2", "tok.mindrecord2.db",
                                            "tok.mindrecord3", "tok.mindrecord3.db"]


def fail_on_partition(partition, first_attempt_only):
    def row_fn(row):
        from pyspark import TaskContext

        context = TaskContext.get()
        if context.partitionId() == partition and row.n == 5 * partition + 3 and (
                context.attemptNumber() == 0 or not first_attempt_only):
            raise RuntimeError(f"injected failure, attempt {context.attemptNumber()}")
        return {"n": row.n}
    return row_fn


@pytest.mark.slow
def test_a_retried_task_leaves_its_rows_once(spark, tmp_path):
    df = spark.range(0, 20, 1, 4).withColumnRenamed("id", "n")          # partition p holds 5p .. 5p + 4
    out = str(tmp_path / "retry.mindrecord")
    schema = {"n": {"type": "int64"}}
    assert write_mindrecord(df, out, schema=schema, row_fn=fail_on_partition(1, True), index_fields=["n"]) == 20
    assert [int(r["n"]) for r in read(out + "0")] == list(range(20))
    assert recordio.verify(out + "0").ok
    assert sorted(os.listdir(tmp_path)) == sorted(f"retry.mindrecord{i}{db}" for i in range(4) for db in ("", ".db"))


@pytest.mark.slow
def test_a_failed_job_leaves_no_dataset_and_keeps_the_old_one(spark, tmp_path):
    df = spark.range(0, 20, 1, 4).withColumnRenamed("id", "n")
    out = str(tmp_path / "failed.mindrecord")
    schema = {"n": {"type": "int64"}}
    with pytest.raises(Exception, match="injected failure, attempt 2"):
        write_mindrecord(df, out, schema=schema, row_fn=fail_on_partition(2, False))
    assert os.listdir(tmp_path) == []
    write_mindrecord(df.limit(3), out, schema=schema, shard_num=1)
    with pytest.raises(Exception, match="injected failure"):
        write_mindrecord(df, out, schema=schema, row_fn=fail_on_partition(0, False), shard_num=1, overwrite=True)
    assert [int(r["n"]) for r in read(out)] == [0, 1, 2]
    assert sorted(os.listdir(tmp_path)) == ["failed.mindrecord", "failed.mindrecord.db"]


@pytest.mark.slow
@pytest.mark.mindspore
def test_mindspore_reads_what_spark_wrote(spark, mindspore_python, tmp_path):
    df = spark.createDataFrame(make_spark_rows(24), "label int, image binary, box array<float>, text string")
    out = str(tmp_path / "ms.mindrecord")
    write_mindrecord(df.repartition(3), out, shard_num=3, index_fields=["label"])
    jobs = [{"op": "read", "source": out + "0", "readers": ["FileReader", "MindDataset"]}]
    [answer] = run_oracle(mindspore_python, jobs, tmp_path)
    ours = read(out + "0")
    assert answer["MindDataset_size"] == 24
    for reader in ("FileReader", "MindDataset"):
        theirs = from_plain(answer[reader])
        assert len(theirs) == 24, reader
        for mine, their in zip(ours, theirs, strict=True):
            assert sorted(mine) == sorted(their)
            for key in mine:
                assert_same_value(mine[key], their[key], reader == "FileReader")


def assert_same_value(mine, their, plain_scalars):
    """One value as recordio and MindSpore give it (MindSpore's FileReader: Python scalars;
    MindDataset: numpy arrays, bytes as uint8, strings as a 0-d str array)."""
    if isinstance(mine, bytes):
        assert (their if isinstance(their, bytes) else np.asarray(their).tobytes()) == mine
    elif isinstance(mine, str):
        assert str(np.asarray(their)) == mine
    elif isinstance(mine, np.generic) and plain_scalars:
        assert type(their) is type(mine.item()) and their == mine.item()
    else:
        a, b = np.asarray(mine), np.asarray(their)
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b), (a, b)


def make_spark_rows(n):
    rng = np.random.default_rng(3)
    return [(i % 5, bytearray(rng.integers(0, 256, 10 + i, np.uint8).tobytes()),
             rng.standard_normal(4).astype(np.float32).tolist(), f"caption {i}") for i in range(n)]


@pytest.mark.slow
def test_convert_parquet_on_spark_equals_the_process_pool(spark, tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from recordio.converters import convert_parquet
    from recordio.tools.__main__ import main

    (tmp_path / "in").mkdir()
    for k in range(3):
        i = np.arange(40 * k, 40 * k + 40)
        table = pa.table({"n": i, "name": [f"row {j}" for j in i], "vec": [list(range(j % 4)) for j in i]})
        pq.write_table(table, tmp_path / "in" / f"part-{k}.parquet", row_group_size=16)
    on_spark = convert_parquet(tmp_path / "in", tmp_path / "spark.mindrecord", shard_num=4, engine="spark", quiet=True)
    on_pool = convert_parquet(tmp_path / "in", tmp_path / "pool.mindrecord", shard_num=4, workers=1, quiet=True)
    assert on_spark.rows == on_pool.rows == 120 and len(on_spark.files) == 4
    same(read(on_spark.files), read(on_pool.files))
    out = tmp_path / "cli.mindrecord"
    assert main(["convert", "parquet", str(tmp_path / "in"), str(out), "--engine", "spark", "--shards", "2",
                 "--quiet"]) == 0
    assert capsys.readouterr().out.startswith(f"wrote 120 rows in 2 shard(s) to {out}")
    pq.write_table(pa.table({"n": [1, None], "name": ["a", "b"], "vec": [[1], [2]]}), tmp_path / "in" / "part-3.parquet")
    with pytest.raises(recordio.FormatError, match="part-3.parquet.*is null"):   # raised on an executor
        convert_parquet(tmp_path / "in", tmp_path / "bad.mindrecord", shard_num=2, engine="spark", quiet=True)


# --- filters on index fields pushed to the .db (recordio/spark/source.py) ------------------------------

@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("indexed") / "ix.mindrecord")
    w = recordio.FileWriter(path, 3)
    w.add_schema({"label": {"type": "int32"}, "name": {"type": "string"}, "v": {"type": "float32"},
                  "blob": {"type": "bytes"}})
    w.add_index(["label", "name"])
    w.write_raw_data([{"label": i % 7, "name": "ab\x00c" if i == 5 else f"n{i % 3}", "v": float(i),
                       "blob": bytes([i % 256]) * (i % 4)} for i in range(300)])
    w.commit()
    return path + "0"


@pytest.fixture
def pushdown(spark):
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    yield spark
    spark.conf.unset("spark.sql.python.filterPushdown.enabled")


def _plan(df):
    """The physical plan's nodes above the scan ("Filter (...)" when Spark still filters)."""
    return df._jdf.queryExecution().executedPlan().toString().split("BatchScan")[0]


def _expected(path, keep):
    return sorted((r for r in as_lists(read(path)) if keep(r)), key=lambda r: r["v"])


@pytest.mark.slow
def test_index_field_filters_are_answered_by_the_db(pushdown, indexed):
    from pyspark.sql import functions as F

    df = read_mindrecord(pushdown, indexed, num_partitions=4).filter((F.col("label") == 3) & (F.col("v") > 10))
    plan = _plan(df)
    assert "Filter (v#" in plan and "label#" not in plan.split("Filter", 1)[1].split("\n")[0]  # label pushed
    assert sorted(collected(df), key=lambda r: r["v"]) == _expected(indexed, lambda r: r["label"] == 3 and r["v"] > 10)
    df = read_mindrecord(pushdown, indexed, ["v", "name"]).filter(F.col("name").isin("ab", "n1"))
    assert "Filter" not in _plan(df)                                    # all of it pushed
    assert sorted(collected(df), key=lambda r: r["v"]) == [
        {"v": r["v"], "name": r["name"]} for r in _expected(indexed, lambda r: r["name"] in ("ab", "n1"))]
    none = read_mindrecord(pushdown, indexed).filter(F.col("label") == 99)
    assert collected(none) == []
    # a float field and a value of another type stay with Spark, and still give the right rows
    df = read_mindrecord(pushdown, indexed).filter(F.col("v") == 7.0)
    assert "Filter" in _plan(df) and [r["v"] for r in collected(df)] == [7.0]


@pytest.mark.slow
def test_without_pushdown_the_same_filters_give_the_same_rows(spark, indexed):
    from pyspark.sql import functions as F

    assert spark.conf.get("spark.sql.python.filterPushdown.enabled", "false") == "false"
    df = read_mindrecord(spark, indexed).filter((F.col("label") == 3) & (F.col("name") == "n0"))
    assert "Filter" in _plan(df)
    assert sorted(collected(df), key=lambda r: r["v"]) == _expected(
        indexed, lambda r: r["label"] == 3 and r["name"] == "n0")


@pytest.mark.slow
def test_a_db_that_names_a_row_with_another_value_is_refused(pushdown, indexed, tmp_path):
    import sqlite3

    from pyspark.sql import functions as F

    folder = os.path.dirname(indexed)
    for name in os.listdir(folder):
        shutil.copy(os.path.join(folder, name), tmp_path / name)
    first = str(tmp_path / os.path.basename(indexed))
    conn = sqlite3.connect(first + ".db")
    conn.execute("UPDATE INDEXES SET label_0 = 3 WHERE ROW_ID = 1")    # row 1 of shard 0 holds another label
    conn.commit()
    conn.close()
    with pytest.raises(Exception, match="the .db disagrees with its data file"):
        read_mindrecord(pushdown, first).filter(F.col("label") == 3).collect()


@pytest.mark.parametrize("equal", [True, False], ids=["equal-lengths", "varying-lengths"])
def test_columns_batch_equals_rows_batch(tmp_path, equal):
    """The columnar Arrow batch a read task yields is the row-by-row one, for every kind of column."""
    from recordio.spark.arrow import columns_batch, rows_batch

    rng = np.random.default_rng(3)
    schema = {"i": {"type": "int32"}, "l": {"type": "int64"}, "f": {"type": "float32"}, "d": {"type": "float64"},
              "t": {"type": "string"}, "b": {"type": "bytes"}, "fixed": {"type": "int64", "shape": [2, 3]},
              "var": {"type": "float32", "shape": [-1, 2]}}
    path = str(tmp_path / "c.mindrecord")
    w = recordio.FileWriter(path)
    w.add_schema(schema)
    w.write_raw_data([{"i": k, "l": -k, "f": k / 2, "d": k / 3, "t": f"t{k} ü" * (k % 3),
                       "b": bytes(rng.integers(0, 256, 4 if equal else k % 5, np.uint8)),
                       "fixed": rng.integers(-9, 9, (2, 3)),
                       "var": rng.random((2 if equal else k % 3, 2), dtype=np.float32)} for k in range(9)])
    w.commit()
    with recordio.FileReader(path) as reader:
        columns = ["t", "b", "fixed", "var", "i", "l", "f", "d"]
        got = columns_batch(reader.read_batch(slice(1, 8)), dict(reader.schema), columns)
        want = rows_batch(reader[1:8], dict(reader.schema), columns)
    assert got.schema == want.schema and got.equals(want)


# --- object storage (moto's S3 server on 127.0.0.1) -----------------------------------------------------

@pytest.fixture(scope="module")
def s3():
    pytest.importorskip("s3fs")
    pytest.importorskip("moto")
    from recordio.tools.remote_servers import moto_server

    with moto_server() as server:
        server.bucket("spark")
        yield server


@pytest.mark.slow
def test_a_dataframe_written_to_s3_reads_back_through_spark(spark, s3, tmp_path, monkeypatch):
    from pyspark.sql import functions as F

    monkeypatch.setenv("RECORDIO_CACHE_DIR", str(tmp_path / "cache"))
    df = read_mindrecord(spark, write_dataset(tmp_path / "src.mindrecord", n=40, shard_num=4))
    url = "s3://spark/ds/all.mindrecord"
    staging = tmp_path / "staging"
    assert write_mindrecord(df, url, schema=SCHEMA, shard_num=3, index_fields=["i32"],
                            storage_options=s3.options, staging_dir=staging) == 40
    assert not any(staging.rglob("*.mindrecord*"))                 # staged, uploaded, then dropped
    want = as_lists(read(str(tmp_path / "src.mindrecord0")))
    with recordio.FileReader(url + "0", storage_options=s3.options) as reader:
        assert len(reader.files) == 3 and as_lists(reader) == want
    back = read_mindrecord(spark, url + "0", num_partitions=5, storage_options=s3.options)
    assert collected(back) == want
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    try:
        picked = [want[2]["i32"], want[29]["i32"]]
        some = read_mindrecord(spark, url + "0", storage_options=s3.options).filter(F.col("i32").isin(*picked))
        assert "Filter" not in _plan(some)
        got = collected(some)
        assert len(got) >= 2 and sorted(got, key=str) == sorted([r for r in want if r["i32"] in picked], key=str)
    finally:
        spark.conf.unset("spark.sql.python.filterPushdown.enabled")
    with pytest.raises(recordio.errors.DatasetExistsError):
        write_mindrecord(df, url, schema=SCHEMA, storage_options=s3.options, staging_dir=staging)


@pytest.mark.slow
def test_a_failed_write_to_s3_publishes_nothing(spark, s3, tmp_path, monkeypatch):
    monkeypatch.setenv("RECORDIO_CACHE_DIR", str(tmp_path / "cache"))
    df = spark.createDataFrame([(i,) for i in range(30)], "label int").repartition(3)

    def boom(row):
        if row.label == 17:
            raise RuntimeError("row 17 refused")
        return {"label": row.label}

    url = "s3://spark/failed/ds.mindrecord"
    with pytest.raises(Exception, match="row 17 refused"):
        write_mindrecord(df, url, schema={"label": {"type": "int32"}}, row_fn=boom, storage_options=s3.options,
                         staging_dir=tmp_path / "staging")
    assert not s3.bucket("spark").exists("spark/failed/ds.mindrecord0.db")
    with pytest.raises(recordio.errors.MissingFileError):
        recordio.FileReader(url + "0", storage_options=s3.options)


def test_recordio_missing_on_the_executors_names_pyspark_python():
    from types import SimpleNamespace

    from recordio.errors import MissingExtraError
    from recordio.spark.executors import recordio_on_executors

    spark = SimpleNamespace(sparkContext=SimpleNamespace(pythonExec="/opt/py/bin/python3"))     # no JVM needed
    with pytest.raises(MissingExtraError, match=r"executors' Python \(/opt/py/bin/python3\) cannot import recordio: "
                                                r"set PYSPARK_PYTHON"):
        with recordio_on_executors(spark):
            raise RuntimeError("An exception was thrown from the Python worker: ... ModuleNotFoundError: No module "
                               "named 'recordio'\n\tat org.apache.spark...")
    with pytest.raises(RuntimeError, match="No module named 'tokenizers'"):      # another cause: unchanged
        with recordio_on_executors(spark):
            raise RuntimeError("ModuleNotFoundError: No module named 'tokenizers'")


EXECUTORS_WITHOUT_RECORDIO = r'''
import os, sys
from pyspark.sql import SparkSession
from recordio.errors import MissingExtraError
from recordio.spark import read_mindrecord, write_mindrecord
import recordio

python, out = sys.argv[1], sys.argv[2]
os.environ.update(SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=python, PYSPARK_DRIVER_PYTHON=sys.executable)
spark = (SparkSession.builder.master("local[1]")
         .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
         .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false").getOrCreate())
spark.sparkContext.setLogLevel("OFF")
with recordio.FileWriter(os.path.join(out, "plain.mindrecord")) as w:
    w.add_schema({"a": {"type": "int32"}})
    w.write_raw_data([{"a": 1}])
for name, call in (("write", lambda: write_mindrecord(spark.createDataFrame([(1,)], "a int"),
                                                     os.path.join(out, "w.mindrecord"))),
                   ("read", lambda: read_mindrecord(spark, os.path.join(out, "plain.mindrecord")).collect())):
    try:
        call()
        print(name, "no error")
    except MissingExtraError as exc:
        print(name, "MESSAGE", str(exc).replace("\n", " "))
'''


@pytest.mark.slow
def test_executors_without_recordio_get_a_message_naming_the_fix(tmp_path):
    """A real Spark whose executors' Python cannot import recordio (blocked by its sitecustomize)."""
    import subprocess

    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(
        "import sys\nclass _Block:\n    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'recordio':\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, _Block())\n")
    python = tmp_path / "python-without-recordio"
    python.write_text(f'#!/bin/sh\nPYTHONPATH="{blocker}${{PYTHONPATH:+:$PYTHONPATH}}" exec {sys.executable} "$@"\n')
    python.chmod(0o755)
    done = subprocess.run([sys.executable, "-c", EXECUTORS_WITHOUT_RECORDIO, str(python), str(tmp_path)],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith(("write", "read"))]
    assert len(lines) == 2, done.stdout[-2000:] + done.stderr[-3000:]
    for line in lines:
        assert "MESSAGE recordio.spark: the Spark executors' Python" in line and str(python) in line, line
        assert "set PYSPARK_PYTHON" in line and "cannot import recordio" in line, line
