"""The read path: the reader (``reader``), batched column reads (``columns``, with ``column_decode`` and
``column_forms``), where each row's bytes are (``fileset``, ``locations`` with ``location_sources``,
``location_checks`` and ``slot_pool``, ``page_walk``), and what is built on reading: counts (``count``,
``elements``), ``describe``, ``verify``, the index queries (``query``) and ``MindPage``."""
