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
from ..runtime.partition import DevicePartition


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
        return _pick(data, seeds, ranks, targets, chunk_pot)

    first = _first_row(data, random_state, host_weights, ranks)
    indices = [first]
    _, chunk_pot = choose(ranks.rows(data, [first]), lambda total: 0)
    for _ in range(1, n_clusters):
        total = float(ranks.sum(chunk_pot.sum()))
        candidates = pick(random_state.uniform(size=trials) * total, chunk_pot)
        best, chunk_pot = choose(ranks.rows(data, candidates), np.argmin)
        indices.append(int(candidates[best]))
    return np.array(indices)


def _first_row(data, random_state, host_weights, ranks):
    """The first centre's global row, drawn by the rows' weights."""
    if ranks.comm is None:
        return int(random_state.choice(data.n, p=host_weights / host_weights.sum()))
    # numpy's choice(p=...): one uniform draw against the weights' cumsum
    cdf = np.cumsum(host_weights, dtype=np.float64)
    target = random_state.random_sample() * float(ranks.sum(cdf[-1]))
    owner, local = ranks.locate(cdf[-1], np.array([target]))
    here = (ranks.offset + min(int(np.searchsorted(cdf, local[0], side="right")),
                               data.n - 1)) if owner[0] == ranks.rank else 0
    return int(ranks.sum(float(here)))


def _pick(data, seeds, ranks, targets, chunk_pot):
    """Global rows whose prefix sums of potentials (over all ranks' rows,
    *chunk_pot* this rank's chunks' totals) reach *targets*: the same on
    every rank, whatever the split."""
    owner, local = ranks.locate(chunk_pot.sum(), targets)
    mine = owner == ranks.rank
    found = np.zeros(len(targets))
    if mine.any():
        found[mine] = ranks.offset + _locate(data, seeds, chunk_pot, local[mine])
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
    that each draw l = ceil(oversampling_factor * n_clusters) rows with
    probability proportional to weight x squared distance to the nearest
    candidate so far, and lower those distances by the new candidates (the
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
    draws = int(np.ceil(oversampling_factor * n_clusters))
    # a seed for the weighted k-means++, drawn on every rank alike (only rank 0 runs it)
    seed = random_state.randint(np.iinfo(np.int32).max)
    states = ShardedPass(data, ranks, ChunkOversampling)
    first = _first_row(data, random_state, host_weights, ranks)
    chosen, rows = np.array([first]), ranks.rows(data, [first])
    chunk_pot = np.array(states.map(lambda c, st: st.start(rows[0])))
    for _ in range(rounds):
        total = float(ranks.sum(chunk_pot.sum()))
        if not total > 0:   # every row is a copy of a candidate
            break
        drawn = _pick(data, states, ranks, random_state.uniform(size=draws) * total, chunk_pot)
        new = np.setdiff1d(drawn, chosen)   # sorted: the candidates' order is the split's too
        if not len(new):
            continue
        new_rows, base = ranks.rows(data, new), len(chosen)
        chosen, rows = np.concatenate([chosen, new]), np.vstack([rows, new_rows])
        # padded with copies to one size a pass (one kernel build a fit)
        chunk_pot = np.array(states.map(
            lambda c, st: st.lower(_padded(new_rows, draws), base)))
    count = len(rows)
    weights = states.reduce(lambda c, st: SummedArray(st.weigh(count))).values
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
