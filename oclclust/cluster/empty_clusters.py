"""The Lloyd-type centre update and scikit-learn's rules for empty
clusters: the new centres (a centre of no weight keeps its place), the
rows farthest from their centres moved into the empty clusters (over MPI
ranks too), and where no row can help, the heaviest cluster's centre.
Shared by k-means' loop (kmeans/lloyd_loop.py) and fuzzy c-means.
"""
import numpy as np


def centers_update(sums, weights, old):
    """The new centres sums / weights; a centre of no weight keeps its place."""
    return np.where(weights[:, None] > 0, sums / np.where(weights > 0, weights, 1)[:, None], old)


def place_left_empty(centers, weights):
    """scikit-learn's place for the empty clusters no row moved to (there
    are no more distinct rows than clusters): the heaviest cluster's centre
    (the first of equals).  *centers*: the updated ones, changed in place.
    (sklearn's _average_centers copies the heaviest cluster before averaging
    it to an empty cluster of a lower index, so there its centre is a
    scaled copy: we take the place its comment promises.)"""
    big = int(np.argmax(weights))
    centers[weights == 0] = centers[big]


# rows of a rank up to which its farthest rows are scikit-learn's selection
# (numpy.argpartition's order, over every row's distance on the host); past
# it they are found where the rows are, in order of distance, then row (the
# order MPI ranks and Dask chunks merge theirs in): at 10M rows the host's
# read and selection were 50-80 ms of the iteration they flag
HOST_SELECTION_ROWS = 1 << 20


def relocate_empty(sums, weights, farthest, data, host_w, comm=None):
    """scikit-learn's rule: empty clusters take the rows farthest from their
    centres; *sums* and *weights*, over all ranks, are mended in place.
    *farthest(take)*: (distances, rows, labels) of this rank's *take*
    farthest rows, in the order they fill the empty clusters
    (host_farthest: scikit-learn's).  Over ranks (``comm``): the farthest
    of all ranks' farthest (of equals, the first row).  Whether any moved
    (see move_rows)."""
    empty = np.flatnonzero(weights == 0)
    dist, rows, labels = farthest(min(len(empty), data.n))
    mine = [(float(d), int(i), int(label), float(host_w[i]), data.row(i).astype(np.float64))
            for d, i, label in zip(dist, rows, labels)]
    if comm is not None and comm.Get_size() > 1:   # one process: *farthest*'s order
        every = [(r, c) for r, cands in enumerate(comm.allgather(mine)) for c in cands]
        # ranks hold the rows in order: (rank, local row) sorts as the global row
        mine = [c for _, c in sorted(every, key=lambda rc: (-rc[1][0], rc[0], rc[1][1]))]
    return move_rows(sums, weights, empty, mine)


def host_farthest(dist, labels, take):
    """(distances, rows, labels) of the *take* rows of largest *dist* (every
    row's, on the host), in scikit-learn's order (farthest_rows)."""
    far = farthest_rows(dist, take)
    return dist[far], far, labels[far]


def farthest_rows(dist, take):
    """np.argpartition(dist, -take)[:-take - 1:-1]: the *take* rows of largest
    *dist*, in scikit-learn's order.  One row of a maximum no other row
    reaches is the argmax (that is what the partition puts last): one pass
    instead of a selection, far cheaper than argpartition."""
    if take == 1 and len(dist):
        top = int(np.argmax(dist))
        if np.count_nonzero(dist == dist[top]) == 1:   # no tie, no NaN (NaN != NaN)
            return np.array([top])
    return np.argpartition(dist, -take)[:-take - 1:-1]


def move_rows(sums, weights, empty, candidates):
    """Empty clusters *empty* take the rows of *candidates* in order:
    (distance, row index, its cluster, its weight, the row), out of their
    clusters into the empty ones.  When every candidate sits on its centre
    (no more distinct rows than clusters) none moves and False is returned
    (see place_left_empty)."""
    if not candidates or max(c[0] for c in candidates) == 0:
        return False   # moving a row would not help (scikit-learn's rule)
    for new_id, (_, _, old_id, w, row) in zip(empty, candidates):
        sums[old_id] -= row * w
        weights[old_id] -= w
        sums[new_id] = row * w
        weights[new_id] = w
    return True
