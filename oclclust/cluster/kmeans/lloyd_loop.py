"""One Lloyd loop for every k-means fit: KMeans (one model over the fused
Lloyd pass) and EnsembleKMeans (M models over the ensemble passes; KMeans's
restarts too) drive it over a statistics backend.

The loop holds the rules: the centre update, empty-cluster relocation, the
shift, convergence per model (a model that stops leaves the passes, the
others go on), n_iter per model, history, the progress bar and the verbose
output.  It never knows where distances are computed: it asks the backend
for the statistics of the active models' centres, or for a whole step when
the backend can take one on the device.  LloydBackend is the protocol, with
the defaults of a backend that has none of the optional capabilities.
"""
import time

import numpy as np

from .. import empty_clusters
from ..empty_clusters import (centers_update, host_farthest, move_rows, place_left_empty,
                              relocate_empty)
from ..spherical import renormalised
from ...runtime.progress import Progress, history_entry


class LloydBackend:
    """What the loop asks of the passes (subclasses: kmeans.LloydModel,
    ensemble.EnsembleModels).  ``name`` labels the progress bar; ``ranks``
    is the fit's comm.Ranks; with ``exact_shifts`` every shift is summed in
    numpy's order (the one KMeans records), else only one within rounding
    of tol (so that a model stops where KMeans would)."""

    name = "k-means"
    exact_shifts = False
    spherical = False   # centres renormalised after each update (on the host)

    def stats(self, centers_list):
        """(sums C x d, weights C) float64 of all ranks' rows about the
        centres of *centers_list*, the models packed."""
        raise NotImplementedError

    def nearest(self, centers):
        """(distance float64, label) of each of this rank's rows to its
        nearest of *centers*: a model of the last stats() with an empty
        cluster."""
        raise NotImplementedError

    def farthest(self, centers, take):
        """The *take* rows of all chunks farthest from their nearest of
        *centers* (sharded.farthest_of): relocation over remote rows."""
        raise NotImplementedError

    def farthest_found(self, take):
        """(distances, rows, labels) of this rank's *take* rows farthest from
        their centres in the last pass, largest first, of equals the first
        row, found where the rows are; None where they cannot be (the host
        selects them from every row's distance)."""
        return None

    def relocate(self, sums, weights, centers, data, host_w):
        """One model's empty clusters (of *sums*, *weights*, mended in
        place) take the rows farthest from their *centers* (relocate_empty):
        scikit-learn's selection on the host, or past HOST_SELECTION_ROWS
        rows the devices' (farthest_found); over rows on a Dask cluster's
        workers, each chunk's farthest merged as MPI's ranks merge theirs."""
        if getattr(data, "remote", False):
            empty = np.flatnonzero(weights == 0)
            return move_rows(sums, weights, empty,
                             self.farthest(centers, min(len(empty), data.n)))

        def farthest(take):
            found = (self.farthest_found(take)
                     if data.n > empty_clusters.HOST_SELECTION_ROWS else None)
            if found is not None:
                return found
            dist, labels = self.nearest(centers)
            return host_farthest(dist, labels, take)
        return relocate_empty(sums, weights, farthest, data, host_w, self.ranks.comm)

    def record(self, shifts, moving, n_models):
        """(the statistics of this iteration for history_ and the bar, the
        verbose line's text); *shifts*: the active models', *moving*: those
        that go on."""
        raise NotImplementedError

    def finish(self, centers):
        """(inertia per model, labels per model of this rank's rows) of the
        final *centers*."""
        raise NotImplementedError

    def device_step(self, centers, active, tol, iterations_left):
        """The *active* models' iteration with their centres kept on the
        device: their shifts, or None when the host's update must take it."""
        return None

    def centers_to_host(self, centers):
        """Centres kept on the device, if any, into *centers*."""

    def labels_unchanged(self, active):
        """Per active model: whether it stops whatever its shift (its last
        pass changed no label)."""
        return [False] * len(active)

    def rebalance(self):
        """Between iterations while a model moves (measured device weights)."""


def fit_lloyd(backend, inits, max_iter, tol, data, host_w, verbose=0, history=None,
              checkpoint=None):
    """Lloyd iterations of every model of *inits* at once, each stopping at
    its own iteration (shift <= *tol*, absolute; or its labels unchanged).  Returns
    (centers list, inertia per model, n_iter per model, labels per model);
    each iteration's statistics are appended to *history* when given.
    *verbose*: this rank's (0 off the first rank).  *checkpoint*: the fit's
    (cluster.checkpoint.Checkpoint) or None: each iteration's end may write
    the loop's state (lloyd_state); a state it read is where the loop goes
    on (*inits*: its centres)."""
    centers = [np.array(c, np.float64) for c in inits]
    n_iter = np.zeros(len(centers), np.int64)
    active = list(range(len(centers)))
    first = 0
    saved = None if checkpoint is None else checkpoint.saved
    if saved is not None:   # (the first resumed pass counts every label as changed)
        n_iter, active, first = saved["n_iter"].copy(), list(saved["active"]), saved["iteration"]
        if history is not None:
            history[:] = saved["history"]
    with Progress(max_iter, backend.name, bool(verbose)) as bar:
        for it in range(first, max_iter):
            if not active:
                break
            start = time.perf_counter()
            # a checkpoint reads the centres back each iteration: no pass may
            # run ahead of that read (it would rewrite the labels the next
            # pass counts its changes against, and a fit stopped early)
            shifts = lloyd_step(backend, centers, active, tol, data, host_w,
                                iterations_left=0 if checkpoint is not None else max_iter - it - 1)
            n_iter[active] = it + 1
            unchanged = backend.labels_unchanged(active)
            moving = [m for m, s, same in zip(active, shifts, unchanged)
                      if s > tol and not same]
            if len(moving) < len(active):
                backend.centers_to_host(centers)    # the stopped models' centres are final
            stats, line = backend.record(shifts, moving, len(centers))
            if history is not None:
                history.append(history_entry(it + 1, start, data, **stats))
            bar.step(**stats)
            if verbose:   # scikit-learn's lines
                print(f"Iteration {it}, {line}.")
                if len(centers) == 1 and not moving:
                    print(f"Converged at iteration {it}: " + (
                        "strict convergence." if backend.labels_unchanged(active)[0] else
                        f"center shift {shifts[0]} within tolerance {tol}."))
            active = moving
            if checkpoint is not None:
                checkpoint.step(lambda: lloyd_state(backend, centers, n_iter, active, it + 1,
                                                    history))
            if active:
                backend.rebalance()
    backend.centers_to_host(centers)
    inertia, labels = backend.finish(centers)
    return centers, inertia, n_iter, labels


def lloyd_state(backend, centers, n_iter, active, iteration, history):
    """The loop's state after *iteration* (a checkpoint's): every model's
    centres (from the device where they are kept there), iterations, the
    models still moving and the history so far."""
    backend.centers_to_host(centers)
    return {**{f"centers{m}": c for m, c in enumerate(centers)}, "models": len(centers),
            "n_iter": np.asarray(n_iter), "active": [int(m) for m in active],
            "iteration": int(iteration), "history": history or []}


def saved_centers(saved):
    """The centres of every model of a checkpoint's state (lloyd_state's)."""
    return [saved[f"centers{m}"] for m in range(saved["models"])]


def lloyd_step(backend, centers, active, tol, data, host_w, iterations_left=None):
    """One pass for the *active* models: their centres (on the device, or
    in *centers*) updated; returns their shifts.  *iterations_left*: how
    many iterations may follow (None: any number)."""
    # the device-resident updates know no renormalisation: a spherical fit's is the host's
    shifts = None if backend.spherical else backend.device_step(centers, active, tol,
                                                                  iterations_left)
    if shifts is None:
        shifts = host_update(backend, centers, active, tol, data, host_w)
    return shifts


def sequential_shifts(moved, off):
    """Each model's (rows *off*[i]:*off*[i + 1] of *moved*) squared moves
    summed left to right, each row's in dimension order, then the rows in
    order: the order of the device-resident ensemble update
    (ensemble_update.cl.mako), so a model's shifts, and the history, are
    the same bits whichever updates it (numpy's reductions add the first
    value to the pairwise sum of the rest)."""
    rows = moved[:, 0].copy() if moved.shape[1] else np.zeros(len(moved))
    for c in range(1, moved.shape[1]):
        rows += moved[:, c]
    return np.array([np.add.accumulate(rows[a:b])[-1] if b > a else 0.0
                     for a, b in zip(off[:-1], off[1:])])


def host_update(backend, centers, active, tol, data, host_w):
    """The update on the host (empty clusters relocated): the *active*
    models' centres replaced in *centers*; returns their shifts."""
    sums, weights = backend.stats([centers[m] for m in active])
    off = np.cumsum([0] + [len(centers[m]) for m in active])
    old = np.concatenate([centers[m] for m in active])
    left = []    # models whose empty clusters stay empty (no row to move)
    for i in np.unique(np.searchsorted(off, np.flatnonzero(weights == 0), side="right") - 1):
        a, b = off[i], off[i + 1]    # a model with an empty cluster: its rows mended
        if not backend.relocate(sums[a:b], weights[a:b], centers[active[i]], data, host_w):
            left.append((a, b))
    new = centers_update(sums, weights, old)
    for a, b in left:
        place_left_empty(new[a:b], weights[a:b])
    if backend.spherical:
        new = renormalised(new)
    moved = (new - old) ** 2
    shifts = sequential_shifts(moved, off)
    # KMeans sums its shift in numpy's pairwise order: near tol, so does each
    # model here, so that it stops at KMeans's iteration
    exact = backend.exact_shifts | (np.abs(shifts - tol) <= 1e-9 * max(tol, 1e-300))
    for i in np.flatnonzero(exact):
        shifts[i] = moved[off[i]:off[i + 1]].sum()
    for i, m in enumerate(active):
        centers[m] = new[off[i]:off[i + 1]]
    return shifts
