"""Where a dataset's bytes live: a dataset behind URLs read through the node-local cache (``remote``,
``store``, ``cache``, ``cache_bound``, ``prefetch``, ``span_plan``, ``fetch_checks``) and written to
one (``upload``)."""
