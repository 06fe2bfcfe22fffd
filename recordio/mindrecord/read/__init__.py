"""The read path: the reader (``reader``), batched column reads (``columns``), where each row's bytes
are (``fileset``, ``locations``, ``page_walk``), and what is built on reading: counts (``count``,
``elements``), ``describe``, ``verify``, the index queries (``query``) and ``MindPage``."""
