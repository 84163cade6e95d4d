"""``python -m oclclust.compare``: the strategy benchmark of the design card --
ensemble k-means' task / data / concatenated strategies and KD-tree leaf
mappings, timed on the devices.  The same command as ``python -m oclclust
compare``; the benchmark itself is oclclust.cli.compare.
"""
