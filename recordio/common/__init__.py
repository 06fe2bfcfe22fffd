"""Names MindSpore scripts import from ``mindspore.common`` (``dtype``, as ``mstype``)."""
