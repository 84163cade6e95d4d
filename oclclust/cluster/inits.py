"""Initial centres drawn from a fit's rows on all its devices and ranks
(draw_centers), greedy k-means++ seeding (the draws here, the potentials and
prefix sums on the devices: ChunkSeeding) and k-means|| seeding (the draws
here, the candidates' distances and weights on the devices: ChunkOversampling;
the weighted k-means++ over the candidates on one device: DeviceGreedy)."""
import numpy as np

from ..parallel.comm import Ranks
from ..parallel.manager import DeviceManager
from ..parallel.sharded import ShardedPass, SummedArray
from ..passes.kmeanspp import ChunkOversampling, ChunkSeeding, DeviceGreedy
from ..runtime.devices import preferred
from ..runtime.exact_sums import ExactWords, rounded_sum
from ..runtime.partition import DevicePartition


def kmeans_plusplus(data, n_clusters, random_state, host_weights, n_local_trials=None,
                    ranks=None):
    """Indices of rows chosen by greedy k-means++ on the devices.

    scikit-learn's draws from the same random state (KMeans' default
    seeding; GaussianMixture's ``init_params="k-means++"``).

    Parameters
    ----------
    data : ShardedData
        Rows on the devices (:meth:`DeviceManager.scatter`).
    n_clusters : int
        The rows to choose.
    random_state : numpy.random.RandomState
        The random stream.
    host_weights : ndarray of shape (n_samples,)
        The rows' weights.
    n_local_trials : int, default=None
        Candidates scored a step (None: 2 + log(n_clusters)).
    ranks : Ranks, default=None
        With several MPI ranks the rows are every rank's, the indices
        global, and every rank draws the same numbers: the choice one
        process seeding the concatenated rows makes.

    Returns
    -------
    indices : ndarray of shape (n_clusters,)
        The chosen rows.

    See Also
    --------
    KMeans : its default seeding.

    Examples
    --------
    >>> import numpy as np
    >>> import oclclust as oc
    >>> X = np.array([[1, 2], [1, 4], [1, 0], [10, 2], [10, 4], [10, 0]], dtype=np.float32)
    >>> data = oc.DeviceManager().scatter(X)
    >>> indices = oc.kmeans_plusplus(data, 2, np.random.RandomState(0), np.ones(6))
    >>> sorted(X[indices, 0].tolist())
    [1.0, 10.0]
    >>> data.close()
    """
    trials = n_local_trials or 2 + int(np.log(n_clusters))
    ranks = ranks or Ranks(None, data.n, data.d, data.dtype)
    # each chunk's seeding state stays beside its rows (a Dask worker's too)
    seeds = ShardedPass(data, ranks, lambda c: ChunkSeeding(c, trials))

    exact = _all_exact(seeds, ranks)

    def on_chunks(method, *args):
        return seeds.map(lambda c, seed: getattr(seed, method)(*args))

    def choose(rows, best_of):
        pots = on_chunks("potentials", rows)   # per chunk: blocks x candidates
        totals = _totals(pots, ranks, exact)
        best = best_of(totals)
        on_chunks("keep", best)
        return best, [p[:, best] for p in pots], totals[best]

    first = _first_row(data, random_state, host_weights, ranks)
    indices = [first]
    _, chunk_pot, total = choose(ranks.rows(data, [first]), lambda totals: 0)
    for _ in range(1, n_clusters):
        candidates = _pick(data, seeds, ranks, random_state.uniform(size=trials) * total,
                           chunk_pot, total, exact)
        best, chunk_pot, total = choose(ranks.rows(data, candidates), np.argmin)
        indices.append(int(candidates[best]))
    return np.array(indices)


def _all_exact(states, ranks):
    """Whether every chunk of every rank seeds split-free (ChunkSeeding.exact:
    fp64 devices, exact sums enabled); else all take today's float sums."""
    inexact = sum(not e for e in states.map(lambda c, st: st.exact))
    return float(ranks.sum(float(inexact))) == 0


def _totals(chunk_blocks, ranks, exact):
    """Each column's sum over the blocks of all chunks and ranks (float64):
    exactly, rounded once (exact_sums.ExactWords: the same bits whatever
    the split), or the chunks' sums in chunk order then over the ranks."""
    if exact:
        if ranks.comm is None and len(chunk_blocks) == 1 and len(chunk_blocks[0]):
            # one partition: its exact sums rounded by math.fsum (the words'
            # bits, rounded_sum; the wide words' Fractions took ~0.1 ms a step)
            return rounded_sum(chunk_blocks[0])
        words = sum(ExactWords.of_values(b) for b in chunk_blocks)
        return words.from_flat(ranks.sum(words.flat(), exact=True)).value()
    return ranks.sum(np.sum([b.sum(axis=0) for b in chunk_blocks], axis=0))


def _first_row(data, random_state, host_weights, ranks):
    """The first centre's global row, drawn by the rows' weights: numpy's
    choice over all ranks' weights (gathered: 1/d of the rows), the draw of
    one process whatever the split."""
    if ranks.comm is not None:
        host_weights = np.concatenate(ranks.gather(np.asarray(host_weights)))
    return int(random_state.choice(ranks.n, p=host_weights / host_weights.sum()))


# the grid of the exact draws: the total under 2^GRID_BITS units, so the
# blocks' potentials as integers and their prefix sums fit an int64
GRID_BITS = 62


def _pick(data, seeds, ranks, targets, chunk_blocks, total, exact):
    """Global rows drawn by *targets* (uniforms x *total*, the potential of
    all ranks' rows), located in the prefix sums of the potentials in row
    order (*chunk_blocks*: this rank's chunks' potentials a block): the
    same rows on every rank.  Split-free (*exact*) the prefix sums are of
    the fixed blocks' potentials as integers on one grid (_exact_pick);
    else of the chunks' float totals, then the chunk's prefix sums."""
    if exact:
        return _exact_pick(data, seeds, ranks, targets, chunk_blocks, total)
    chunk_pot = np.array([b.sum() for b in chunk_blocks])
    owner, local = ranks.locate(chunk_pot.sum(), targets)
    mine = owner == ranks.rank
    found = np.zeros(len(targets))
    if mine.any():
        found[mine] = ranks.offset + _locate(data, seeds, chunk_pot, local[mine])
    return ranks.sum(found).astype(np.int64)


def _exact_pick(data, seeds, ranks, targets, chunk_blocks, total):
    """The split-free draw: each block's potential (float64, the same bits
    whoever holds the block) truncated to a whole number of 2^lsb, lsb set
    by the exact *total* (GRID_BITS bits under it): integer prefix sums over
    the blocks, exact in any grouping, so the blocks' ends are the same over
    every split of chunks and ranks.  A target, on that grid, falls in the
    first block whose end exceeds it (blocks of zero potential are never
    drawn); its residual there is searched among the block's rows in row
    order (ChunkSeeding.search_blocks).  A total of zero (every row a
    centre) draws global row 0."""
    if not total > 0:
        return np.zeros(len(targets), np.int64)
    lsb = int(np.frexp(total)[1]) - GRID_BITS
    q = np.floor(np.ldexp(np.concatenate([np.zeros(0), *chunk_blocks]), -lsb)).astype(np.int64)
    ends = np.cumsum(q)
    mine_total = int(ends[-1]) if len(ends) else 0
    rank_ends = np.cumsum(np.array(ranks.gather(mine_total), np.int64))
    if rank_ends[-1] == 0:
        return np.zeros(len(targets), np.int64)
    tq = np.minimum(np.floor(np.ldexp(np.asarray(targets, np.float64), -lsb)).astype(np.int64),
                    rank_ends[-1] - 1)
    mine = np.searchsorted(rank_ends, tq, side="right") == ranks.rank
    found = np.zeros(len(targets))
    if mine.any():
        local = tq[mine] - (rank_ends[ranks.rank] - mine_total)
        block = np.searchsorted(ends, local, side="right")
        residual = np.ldexp((local - (ends[block] - q[block])).astype(np.float64), lsb)
        firsts = np.cumsum([0] + [len(b) for b in chunk_blocks])
        chunk = np.searchsorted(firsts, block, side="right") - 1
        offsets = [c.offset for c in data.chunks]
        wanted = {offsets[c]: np.flatnonzero(chunk == c) for c in np.unique(chunk)}

        def search(c, seed):
            if c.offset not in wanted:
                return None
            at = wanted[c.offset]
            return c.offset + seed.search_blocks(block[at] - firsts[chunk[at[0]]],
                                                 residual[at])
        rows = np.zeros(int(mine.sum()))
        for c, got in zip(data.chunks, seeds.map(search)):
            if got is not None:
                rows[wanted[c.offset]] = got
        found[mine] = ranks.offset + rows
    return ranks.sum(found).astype(np.int64)


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


# k-means||'s defaults, re-tuned for issue 23 by the inertia after Lloyd's
# iterations against greedy k-means++'s: l = 0.5k over 5 rounds did best of
# the settings tried, and against l = 2k it scores a quarter of the distances
# and leaves a quarter of the candidates to the greedy steps.
# bench/kmeans.py seeding sweeps them.
DEFAULT_ROUNDS = 5
DEFAULT_OVERSAMPLING = 0.5


def kmeans_parallel(data, n_clusters, random_state, host_weights,
                    oversampling_factor=DEFAULT_OVERSAMPLING, rounds=None, ranks=None):
    """*n_clusters* centres (float64) of all ranks' rows of *data* seeded by
    k-means|| (Bahmani et al. 2012, scalable k-means++).

    A first row drawn by weight, then *rounds* rounds (None: DEFAULT_ROUNDS)
    that each draw l = ceil(oversampling_factor * n_clusters) rows (at most
    all n) with probability proportional to weight x squared distance to the
    nearest candidate so far, and lower those distances by the new candidates (the
    Lloyd pass's assignment over them on the devices, which also keeps each
    row's nearest candidate); each candidate is weighted by the rows nearest
    to it (a count of those indices, no pass over all the candidates), and
    greedy k-means++ on the weighted candidates picks the centres, every
    step on one device (DeviceGreedy).  The draws are l uniform numbers on
    the host located in the prefix sums of the potentials over all ranks'
    rows in row order (Ranks.locate, as greedy k-means++ locates its
    trials), not per-row coin flips: every rank draws the same candidates
    whatever the split of the rows over ranks and devices, without a per-row
    stream.  The host reads one potential per chunk a round."""
    ranks = ranks or Ranks(None, data.n, data.d, data.dtype)
    rounds = DEFAULT_ROUNDS if rounds is None else rounds
    # at most every row a round: a larger factor draws no more candidates
    # (and its l uniform numbers would not fit in memory)
    draws = int(min(np.ceil(oversampling_factor * n_clusters), max(ranks.n, 1)))
    # a seed for the weighted k-means++, drawn on every rank alike (only rank 0 runs it)
    seed = random_state.randint(np.iinfo(np.int32).max)
    states = ShardedPass(data, ranks, ChunkOversampling)
    exact = _all_exact(states, ranks)
    first = _first_row(data, random_state, host_weights, ranks)
    chosen, rows = np.array([first]), ranks.rows(data, [first])
    chunk_pot = states.map(lambda c, st: st.start(rows[0]))
    for _ in range(rounds):
        total = float(_totals([b[:, None] for b in chunk_pot], ranks, exact)[0])
        if not total > 0:   # every row is a copy of a candidate
            break
        drawn = _pick(data, states, ranks, random_state.uniform(size=draws) * total, chunk_pot,
                      total, exact)
        new = np.setdiff1d(drawn, chosen)   # sorted: the candidates' order is the split's too
        if not len(new):
            continue
        new_rows, base = ranks.rows(data, new), len(chosen)
        chosen, rows = np.concatenate([chosen, new]), np.vstack([rows, new_rows])
        # padded with copies to one size a pass (one kernel build a fit)
        chunk_pot = states.map(lambda c, st: st.lower(_padded(new_rows, draws), base))
    count = len(rows)
    # exact sums (ExactWords: settled once the chunks and ranks are in) where
    # split-free, else the chunks' float sums in order
    weights = np.asarray(states.reduce(lambda c, st: SummedArray(st.weigh(count, exact))).values,
                         np.float64)
    idx = ranks.run_failing_all(
        lambda: _weighted_plusplus(data, rows, weights, n_clusters, seed)
        if ranks.rank == 0 else np.zeros(n_clusters, np.int64))
    return rows[ranks.sum(idx.astype(np.float64)).astype(np.int64)]


def _padded(rows, size):
    """*rows* followed by copies of the first, *size* in all: a copy is never
    the nearest (the first of equal distances wins), its distances the same."""
    return np.vstack([rows, np.repeat(rows[:1], size - len(rows), axis=0)])


def _weighted_plusplus(data, candidates, weights, n_clusters, seed):
    """Indices of *n_clusters* of the weighted candidates by greedy k-means++
    on one device of the fit, every step there (DeviceGreedy: the draws
    those of kmeans_plusplus from RandomState(*seed*), made up front; fewer
    candidates than clusters: all, and the rest drawn again by weight, as
    k-means++ does on data with fewer distinct rows than clusters)."""
    rng = np.random.RandomState(seed)
    if len(candidates) < n_clusters:
        more = rng.choice(len(candidates), n_clusters - len(candidates), p=weights / weights.sum())
        return np.concatenate([np.arange(len(candidates)), more])
    profiles = getattr(data.manager, "profiles", None)
    profile = preferred(profiles or DeviceManager(None).profiles)[0]
    trials = 2 + int(np.log(n_clusters))
    part = DevicePartition(profile, candidates.astype(data.dtype), weights.astype(data.dtype))
    # kmeans_plusplus's draws in its order: the first row, then trials a step
    first = _first_row(part, rng, weights.astype(data.dtype), Ranks(None, part.n, part.d,
                                                                    part.dtype))
    uniforms = rng.uniform(size=(n_clusters - 1) * trials)
    return DeviceGreedy(part, trials).run(first, uniforms, n_clusters)


def draw_centers(data, how, n_clusters, random_state, host_weights, ranks, **options):
    """*n_clusters* initial centres (float64), the same on every rank, drawn
    from all ranks' rows: ``how`` "k-means++" (greedy, on the devices),
    "k-means||" (kmeans_parallel, with *options* oversampling_factor and
    rounds) or "random" (rows drawn with probability proportional to their
    weights)."""
    if how == "k-means||":
        return kmeans_parallel(data, n_clusters, random_state, host_weights, ranks=ranks,
                               **options)
    if how == "k-means++":
        idx = kmeans_plusplus(data, n_clusters, random_state, host_weights, ranks=ranks)
    else:   # every rank draws from all weights (1/d of the data)
        w = np.concatenate(ranks.gather(host_weights)) if ranks.comm else host_weights
        idx = random_state.choice(ranks.n, size=n_clusters, replace=False, p=w / w.sum())
    return ranks.rows(data, idx)
