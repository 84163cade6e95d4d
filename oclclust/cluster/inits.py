"""Initial centres drawn from a fit's rows on all its devices and ranks
(draw_centers), and greedy k-means++ seeding: the draws here, the potentials
and prefix sums on the devices (ChunkSeeding)."""
import numpy as np

from ..parallel.comm import Ranks
from ..parallel.sharded import ShardedPass
from ..passes.kmeanspp import ChunkSeeding


def kmeans_plusplus(data, n_clusters, random_state, host_weights, n_local_trials=None,
                    ranks=None):
    """Indices of *n_clusters* rows of *data* (ShardedData) chosen by greedy k-means++.

    With *ranks* (mpi.Ranks of several ranks) the rows are every rank's, the
    indices global, and every rank draws the same numbers: the choice is that
    of one process seeding the concatenated data."""
    trials = n_local_trials or 2 + int(np.log(n_clusters))
    ranks = ranks or Ranks(None, data.n, data.d, data.dtype)
    # each chunk's seeding state stays beside its rows (a Dask worker's too)
    seeds = ShardedPass(data, ranks, lambda c: ChunkSeeding(c, trials))

    def on_chunks(method, *args):
        return seeds.map(lambda c, seed: getattr(seed, method)(*args))

    def choose(rows, best_of):
        pots = np.array(on_chunks("potentials", rows))   # chunks x candidates
        best = best_of(ranks.sum(pots.sum(axis=0)))
        on_chunks("keep", best)
        return best, pots[:, best]

    def pick(targets, chunk_pot):
        """Global rows whose prefix sums of potentials reach *targets*."""
        owner, local = ranks.locate(chunk_pot.sum(), targets)
        mine = owner == ranks.rank
        found = np.zeros(len(targets))
        if mine.any():
            found[mine] = ranks.offset + _locate(data, seeds, chunk_pot, local[mine])
        return ranks.sum(found).astype(np.int64)

    if ranks.comm is None:
        first = int(random_state.choice(data.n, p=host_weights / host_weights.sum()))
    else:   # numpy's choice(p=...): one uniform draw against the weights' cumsum
        cdf = np.cumsum(host_weights, dtype=np.float64)
        target = random_state.random_sample() * float(ranks.sum(cdf[-1]))
        owner, local = ranks.locate(cdf[-1], np.array([target]))
        here = (ranks.offset + min(int(np.searchsorted(cdf, local[0], side="right")),
                                   data.n - 1)) if owner[0] == ranks.rank else 0
        first = int(ranks.sum(float(here)))
    indices = [first]
    _, chunk_pot = choose(ranks.rows(data, [first]), lambda total: 0)
    for _ in range(1, n_clusters):
        total = float(ranks.sum(chunk_pot.sum()))
        candidates = pick(random_state.uniform(size=trials) * total, chunk_pot)
        best, chunk_pot = choose(ranks.rows(data, candidates), np.argmin)
        indices.append(int(candidates[best]))
    return np.array(indices)


def _locate(data, seeds, chunk_pot, targets):
    """numpy.searchsorted over the global prefix sums, chunk by chunk."""
    ends = np.cumsum(chunk_pot)
    owner = np.minimum(np.searchsorted(ends, targets, side="left"), len(chunk_pot) - 1)
    found = np.empty(len(targets), dtype=np.int64)
    # each owning chunk's targets, by its first row (what the chunk knows of itself)
    offsets = [c.offset for c in data.chunks]
    wanted = {offsets[c]: (np.flatnonzero(owner == c),
                           targets[owner == c] - (ends[c - 1] if c else 0.0))
              for c in np.unique(owner)}
    local = {offset: t for offset, (_, t) in wanted.items()}

    def search(chunk, seed):
        if chunk.offset not in local:
            return None
        return chunk.offset + seed.search(local[chunk.offset])
    for chunk, rows in zip(data.chunks, seeds.map(search)):
        if rows is not None:
            found[wanted[chunk.offset][0]] = rows
    return found


def draw_centers(data, how, n_clusters, random_state, host_weights, ranks):
    """*n_clusters* initial centres (float64), the same on every rank, drawn
    from all ranks' rows: ``how`` "k-means++" (greedy, on the devices) or
    "random" (rows drawn with probability proportional to their weights)."""
    if how == "k-means++":
        idx = kmeans_plusplus(data, n_clusters, random_state, host_weights, ranks=ranks)
    else:   # every rank draws from all weights (1/d of the data)
        w = np.concatenate(ranks.gather(host_weights)) if ranks.comm else host_weights
        idx = random_state.choice(ranks.n, size=n_clusters, replace=False, p=w / w.sum())
    return ranks.rows(data, idx)
