"""Every order of the pipeline: which rows an epoch reads, in which order, on which shard.

An order is a pure function of ``(seed, epoch)`` and the source's size (and, for some modes, its
rows per file or class values), so every rank and worker computes the same one without talking.

* ``shuffle``: the shuffle modes (``Shuffle``) and the orders they give; ``ORDER_VERSION``;
* ``permutation``: the keyed permutation behind a shuffled epoch, and lazy views of an order;
* ``shards``: the split of an epoch's order between shards, DataLoader workers and a resume;
* ``sampler_chain``: the ``Sampler`` contract and chains of samplers (``add_child``);
* ``samplers``: MindSpore's samplers, and ``DefaultOrder`` (the sampler a source builds from its
  ``shuffle``/``num_shards``/``shard_id``/``num_padded`` arguments);
* ``balance``: ``WeightedClassSampler``; ``mix``: the order of a weighted mix (the source is
  ``recordio.dataset.mixed``);
* ``ms_order``, ``ms_chains``, ``ms_text``: MindSpore 2.10's own orders, reproduced for
  ``config.set_order_mode("mindspore")`` (MindDataset's samplers, sampler chains, TextFileDataset).

A new order is a ``Sampler`` subclass here (its ``_own_order``/``_own_total``); the public names are
re-exported from ``recordio.dataset``. Nothing here imports the rest of the pipeline: a source answers
the questions an order asks (``file_counts()``, ``class_values(column)``) by public methods.
"""
