"""MindSpore 2.10 as an oracle: a script run *under MindSpore's Python* as a subprocess.

    /path/to/ms-venv/bin/python tests/ms_oracle.py REQUEST.pkl RESPONSE.pkl

The request is a pickle (protocol 4) of ``{"jobs": [job, ...]}``; the response is a stream
of pickles: ``{"mindspore": version, "numpy": version}``, then one result per job, in order,
each flushed when done (see :func:`main`). A job that raises gives ``{"error": "<type>:
<message>"}`` and the next job still runs. Jobs:

* ``{"op": "read", "source": path | [paths], "columns": None | [names], "readers": [...]}``
  reads the dataset with ``mindspore.mindrecord.FileReader`` and/or
  ``mindspore.dataset.MindDataset(shuffle=False)`` and returns
  ``{"FileReader": rows | {"error"}, "MindDataset": rows | {"error"}, "MindDataset_size": n}``.
* ``{"op": "case", "name": NAME}`` runs ``ms_ops_cases.CASES[NAME]`` on MindSpore; returns
  ``{"value": result}``.
* ``{"op": "write", "path", "shard_num", "header_size", "page_size", "schema", "desc",
  "index": None | [names], "calls": [[row, ...], ...], "parallel_writer": bool,
  "append_calls": [[row, ...], ...]}`` writes the calls with MindSpore's ``FileWriter``
  (``header_size``/``page_size`` None keeps MindSpore's defaults), commits, then, when
  ``append_calls`` is given, writes those through ``FileWriter.open_for_append`` and
  commits again. Returns ``{}``.

Values cross the boundary as plain Python data, never numpy objects (the two virtualenvs
have different numpy versions): :func:`to_plain` turns arrays into
``("ndarray", dtype.str, shape, bytes)`` and numpy scalars into ``("scalar", dtype.str,
bytes)``; :func:`from_plain` rebuilds them. The test side imports this module for those
two functions only; ``mindspore`` is imported inside :func:`main`.
"""

import pickle
import sys
import time
import traceback

import numpy as np

PROTOCOL = 4


def to_plain(value):
    """``value`` with every numpy array/scalar replaced by a tagged tuple of plain types."""
    if isinstance(value, np.ndarray):
        return ("ndarray", value.dtype.str, list(value.shape), np.ascontiguousarray(value).tobytes())
    if isinstance(value, np.generic):
        return ("scalar", value.dtype.str, value.tobytes())
    if isinstance(value, dict):
        return {k: to_plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [to_plain(v) for v in value]
    return value


def from_plain(value):
    """Inverse of :func:`to_plain`."""
    if isinstance(value, tuple) and value and value[0] == "ndarray":
        _, dtype, shape, data = value
        return np.frombuffer(data, dtype=np.dtype(dtype)).reshape(shape).copy()
    if isinstance(value, tuple) and value and value[0] == "scalar":
        return np.frombuffer(value[2], dtype=np.dtype(value[1]))[0]
    if isinstance(value, dict):
        return {k: from_plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_plain(v) for v in value]
    return value


def _error(exc):
    return {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()[-3000:]}


def _read_filereader(source, columns):
    from mindspore.mindrecord import FileReader

    reader = FileReader(source, columns=columns)
    try:
        return [to_plain(dict(row)) for row in reader.get_next()]
    finally:
        reader.close()


def _read_minddataset(source, columns):
    import mindspore.dataset as ds

    data = ds.MindDataset(source, columns_list=columns, shuffle=False)
    rows = [to_plain(dict(row)) for row in data.create_dict_iterator(num_epochs=1, output_numpy=True)]
    return rows, data.get_dataset_size()


def read_job(job):
    out = {}
    readers = job.get("readers", ("FileReader", "MindDataset"))
    if "FileReader" in readers:
        try:
            out["FileReader"] = _read_filereader(job["source"], job.get("columns"))
        except Exception as exc:  # reported to the test, which decides
            out["FileReader"] = _error(exc)
    if "MindDataset" in readers:
        try:
            out["MindDataset"], out["MindDataset_size"] = _read_minddataset(job["source"], job.get("columns"))
        except Exception as exc:
            out["MindDataset"] = _error(exc)
    return out


def write_job(job):
    from mindspore.mindrecord import FileWriter

    writer = FileWriter(job["path"], shard_num=job.get("shard_num", 1), overwrite=True)
    if job.get("header_size"):
        writer.set_header_size(job["header_size"])
    if job.get("page_size"):
        writer.set_page_size(job["page_size"])
    writer.add_schema(job["schema"], job.get("desc") or "")
    if job.get("index"):
        writer.add_index(list(job["index"]))
    for call in job["calls"]:
        writer.write_raw_data(from_plain(call), parallel_writer=job.get("parallel_writer", False))
    writer.commit()
    if job.get("append_calls"):
        writer = FileWriter.open_for_append(_first_file(job["path"], job.get("shard_num", 1)))
        for call in job["append_calls"]:
            writer.write_raw_data(from_plain(call))
        writer.commit()
    return {}


def _first_file(path, shard_num):
    return path if shard_num == 1 else path + "0" * len(str(shard_num - 1))


# --- pipelines described as data, built the same way on both sides ----------------------------------

FUNCS = {
    "dup": lambda x: (x, x),
    "swap": lambda a, b: (b, a),
    "first": lambda a, b: a,
    "same": lambda x: x,
    "plus1": lambda x: x + 1,
}


def batch_map(a, b, info):
    """A ``per_batch_map`` of two columns: them swapped (MindSpore checks the signature)."""
    return b, a


def make_sampler(ds, desc):
    """``desc = [class name, kwargs]`` or ``[class name, kwargs, child desc]``: the sampler of ``ds``."""
    kwargs = dict(desc[1])
    if isinstance(kwargs.get("shuffle"), str):
        kwargs["shuffle"] = getattr(ds.Shuffle, kwargs["shuffle"])
    sampler = getattr(ds, desc[0])(**kwargs)
    if len(desc) > 2:
        sampler.add_child(make_sampler(ds, desc[2]))
    return sampler


def build_pipeline(ds, spec):
    """``spec = {"source": {MindDataset kwargs}, "steps": [[name, kwargs], ...]}`` with ``ds``
    either ``mindspore.dataset`` or ``recordio.dataset``; the source's ``sampler`` is a
    :func:`make_sampler` description; steps: map (``fn`` a FUNCS key), project, rename, batch
    (``per_batch_map`` true for :func:`batch_map`), zip and concat (``with`` the kwargs of a second
    MindDataset, zip's optionally renamed), repeat, add_sampler / use_sampler (``sampler`` a
    description), split (``part``: which part to keep)."""
    source = dict(spec["source"])
    if isinstance(source.get("shuffle"), str):
        source["shuffle"] = getattr(ds.Shuffle, source["shuffle"])        # a Shuffle member by name
    if "sampler" in source:
        source["sampler"] = make_sampler(ds, source["sampler"])
    data = ds.MindDataset(**source)
    for name, kwargs in spec["steps"]:
        kwargs = dict(kwargs)
        if name in ("add_sampler", "use_sampler"):
            getattr(data, name)(make_sampler(ds, kwargs["sampler"]))
        elif name == "split":
            data = data.split(kwargs["sizes"], randomize=kwargs.get("randomize", True))[kwargs["part"]]
        elif name == "map":
            data = data.map(FUNCS[kwargs.pop("fn")], **kwargs)
        elif name == "batch":
            if kwargs.pop("per_batch_map", False):
                kwargs["per_batch_map"] = batch_map
            data = data.batch(**kwargs)
        elif name in ("zip", "concat"):
            other = ds.MindDataset(**kwargs.pop("with"))
            if kwargs.get("rename"):
                other = other.rename(*kwargs.pop("rename"))
            data = data.zip(other) if name == "zip" else data.concat(other)
        else:
            data = getattr(data, name)(**kwargs)
    return data


def pipeline_job(job):
    """The column names and the first ``rows`` tuples (``output_numpy=True``) of a pipeline."""
    import mindspore.dataset as ds

    import os
    os.environ.update(job.get("env", {}))
    if job.get("seed") is not None:
        ds.config.set_seed(job["seed"])
    data = build_pipeline(ds, job["pipeline"])
    rows = []
    iterator = data.create_tuple_iterator(num_epochs=job.get("epochs", 1), output_numpy=True)
    for _ in range(job.get("epochs", 1)):              # epochs one after another, rows of each in full
        for row in iterator:
            rows.append(to_plain(list(row)))
            if len(rows) == job.get("rows", 8):
                break
    for name in job.get("env", {}):
        del os.environ[name]
    return {"names": data.get_col_names(), "rows": rows, "size": data.get_dataset_size()}


def case_job(job):
    """``ms_ops_cases.CASES[name](mindspore.dataset, mindspore.dataset.transforms)``, as plain data."""
    import mindspore.dataset as ds
    import mindspore.dataset.transforms as transforms

    import ms_ops_cases
    if job.get("seed") is not None:
        ds.config.set_seed(job["seed"])
    return {"value": to_plain(ms_ops_cases.CASES[job["name"]](ds, transforms))}


JOBS = {"read": read_job, "write": write_job, "pipeline": pipeline_job, "case": case_job}


def main(argv):
    """Run the jobs of REQUEST.pkl; RESPONSE.pkl gets one pickle per line of work, flushed as it goes.

    The first pickle is ``{"mindspore": version, "numpy": version}``, then one result per
    job. If MindSpore kills the process (it segfaults on some inputs), the caller sees how
    many results arrived and knows which job did it.
    """
    request_path, response_path = argv
    with open(request_path, "rb") as f:
        request = pickle.load(f)
    import mindspore

    with open(response_path, "wb") as out:
        _emit(out, {"mindspore": mindspore.__version__, "numpy": np.__version__})
        for job in request["jobs"]:
            start = time.perf_counter()
            try:
                result = JOBS[job["op"]](job)
            except Exception as exc:
                result = _error(exc)
            result["seconds"] = time.perf_counter() - start
            _emit(out, result)
    return 0


def _emit(out, obj):
    pickle.dump(obj, out, protocol=PROTOCOL)
    out.flush()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
