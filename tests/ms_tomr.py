"""Run one of MindSpore's converter classes under MindSpore's Python (the ``mindspore`` tier's oracle).

    /path/to/ms-venv/bin/python tests/ms_tomr.py '[{"class": "Cifar10ToMR", "args": [...], "transform": [...]}, ...]'

Prints one JSON line: a list with, for each job in order, ``{"result": repr(transform's return)}``
or, when the constructor or ``transform`` raises, ``{"error": class name, "bases": [names of its
classes], "message": str}``.
``"tf_features"`` (``{name: [shape, dtype name]}``) is turned into ``tf.io.FixedLenFeature``
objects and passed as the third argument (TFRecordToMR; needs TensorFlow).
"""

import json
import sys


def main():
    print(json.dumps([run(job) for job in json.loads(sys.argv[1])]))


def run(job):
    import mindspore.mindrecord as mindrecord

    args = list(job["args"])
    if "tf_features" in job:
        import tensorflow as tf
        args.insert(2, {k: tf.io.FixedLenFeature(shape, getattr(tf, dtype))
                        for k, (shape, dtype) in job["tf_features"].items()})
    try:
        result = getattr(mindrecord, job["class"])(*args).transform(*job.get("transform", []))
        return {"result": repr(result)}
    except Exception as exc:  # the oracle's answer is the exception itself
        return {"error": type(exc).__name__, "bases": [c.__name__ for c in type(exc).__mro__],
                "message": str(exc)}


if __name__ == "__main__":
    main()
