"""Minimum spanning trees of observations on the device, distances computed
from the rows as they are needed (never an n x n matrix): O(n d) memory.

Pairs with templates/mst/: mst_distance.cl.mako (a def library: one pair's
distance, pdist's arithmetic), mst_nearest.cl.mako (Boruvka's round: every
row's nearest row of another component) and mst_prim.cl.mako (scipy's Prim
from node 0, for the tie order).

The engine of single linkage past the condensed matrix (cluster/
hierarchical.py) and of HDBSCAN (mutual-reachability weights through
``core``).
"""
import numpy as np


def minimum_spanning_tree(plan, X, metric="euclidean", core=None, ties="scipy"):
    """The n-1 edges (a, b, w) of a minimum spanning tree of the rows of X.

    *plan*: a passes.linkage.Plan (device, queue, value type; float64 where
    the device has fp64).  *metric*: euclidean, sqeuclidean, cityblock,
    chebyshev or cosine, computed as scipy's pdist computes it (the same
    float64 rounding).  *core*: None, or n per-row core distances: the edge
    weight is then the mutual-reachability distance max(core[a], core[b],
    d(a, b)).

    Returns int64 a, b and float64 w, sorted by w (a stable sort), in the
    order single linkage needs: hierarchical.label on them gives scipy's Z.
    Tie rule:
      ties="scipy": the edges are scipy's mst_single_linkage rows exactly
        (Prim's algorithm from node 0: each step adds the unmerged row of
        least distance to the tree, the lowest index among equals; a is the
        row added the step before, b the new one), stably sorted by w --
        scikit-learn's HDBSCAN and AgglomerativeClustering build the same
        sequence.  Where the tree's weights are all distinct, Boruvka's tree
        gives that Z (the merges are then fixed by the heights alone) and
        a is the end nearer node 0 in the tree (the end Prim reaches
        first); where weights tie, Prim's algorithm runs on the rows (n
        steps of O(n d)) to keep scipy's order.
      ties="any": Boruvka's tree (edge order (w, min(a, b), max(a, b)), so
        the tree is unique), a the end nearer node 0; sorted by that order.
        The same clusters at every height as scipy's, in O(n d log n) work
        per round, whatever the ties.
    """
    raise NotImplementedError
