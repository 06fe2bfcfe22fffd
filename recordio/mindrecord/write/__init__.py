"""The write path: the writer (``writer``), its columns (``columns``), pages and index streams
(``pages``, ``index_stream``), a shard's files (``shard_files``), the commit protocol (``commit``),
appends and their recovery (``append``, ``recovery``), the writer lock (``locks``) and per-shard
writing (``shard_writer``)."""
