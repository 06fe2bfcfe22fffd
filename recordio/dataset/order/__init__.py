"""Every order of the pipeline: which rows an epoch reads, in which order, on which shard."""
