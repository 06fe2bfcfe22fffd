"""The executors' Python must import recordio: when it cannot, say so and how to fix it.

Spark runs recordio's tasks (``write_mindrecord``'s shard writers, the ``mindrecord`` data source of
``read_mindrecord``) in the Python that ``PYSPARK_PYTHON`` names. Without
recordio there, Spark reports ``ModuleNotFoundError`` deep inside a Java stack trace;
:func:`recordio_on_executors` turns that into a :class:`~recordio.errors.MissingExtraError` that names
the Python and the fix.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

from recordio.errors import MissingExtraError

_MISSING = re.compile(r"No module named '(recordio[\w.]*)'")


@contextlib.contextmanager
def recordio_on_executors(session) -> Iterator[None]:
    """Re-raise a Spark failure whose cause is recordio missing from the executors' Python."""
    try:
        yield
    except Exception as exc:
        found = _MISSING.search(str(exc))
        if found is None:
            raise
        python = getattr(session.sparkContext, "pythonExec", None) or "python3"
        raise MissingExtraError(
            f"recordio.spark: the Spark executors' Python ({python}) cannot import {found.group(1)}: set "
            f"PYSPARK_PYTHON to a Python that has recordio, before the SparkSession "
            f"starts (e.g. os.environ['PYSPARK_PYTHON'] = sys.executable in local mode), or install it there: "
            f'pip install "mindrecordio[spark]" (docs/howto-spark.md)', name=found.group(1)) from exc
