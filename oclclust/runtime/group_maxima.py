"""The largest entries of a device vector and where they are, read without
reading the vector: each group of consecutive entries' maximum on the device
(templates/runtime/group_maxima.cl.mako), then only the groups that can
hold the largest ones.  Where the rows farthest from their centres are
(cluster.empty_clusters: a large fit's empty clusters)."""
import dataclasses

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from .codegen import Spec, kernel, kernel_work_group_limit

GROUPS = 4096   # groups a vector is cut into: few rows each to read, few maxima
GPU_WG = 256    # a GPU's work-group a group (any size gives the same maxima)


@dataclasses.dataclass(frozen=True)
class GroupMaximaSpec(Spec):
    """group_maxima.cl.mako: a work-group's maximum.  No sums: no fp64 asked
    for float32 values."""
    template = "runtime/group_maxima.cl.mako"
    acc_double: bool = False
    wg: int = 1


def group_maxima(queue, values, n, groups, wg=None):
    """(maximum of each of *groups* groups of consecutive entries of the
    first *n* of *values* (a device array), entries a group).  The
    work-group (*wg*, a power of two): on a CPU runtime one item (its items
    would run in turn at each barrier), else GPU_WG where the kernel allows."""
    per_group = -(-n // groups)
    groups = -(-n // per_group)
    if wg is None:
        wg = 1 if queue.device.type & cl.device_type.CPU else GPU_WG
    spec = GroupMaximaSpec(dtype=values.dtype.name, wg=wg)
    knl = kernel(queue.context, spec, "group_maxima")
    if wg > 1 and kernel_work_group_limit(knl, queue.device) < wg:
        spec = GroupMaximaSpec(dtype=values.dtype.name, wg=1)
        knl = kernel(queue.context, spec, "group_maxima")
    most = cla.empty(queue, groups, values.dtype)
    knl(queue, (groups * spec.wg,), (spec.wg,), values.data, np.int64(n),
        np.int64(per_group), most.data)
    return most.get(queue), per_group


@dataclasses.dataclass(frozen=True)
class GroupEntriesSpec(Spec):
    """group_entries.cl.mako: copies alone."""
    template = "runtime/group_entries.cl.mako"
    acc_double: bool = False


GATHER_WG = 64   # copies alone: any work-group copies the same


def group_entries(queue, values, labels, n, per_group, chosen):
    """(values, labels) on the host of the *chosen* groups of *per_group*
    consecutive entries of the first *n* (device arrays), the groups one
    after another, -inf and -1 past n: gathered on the device, then two
    reads (a read a group was most of a relocation on NVIDIA's runtime:
    124 small reads into pageable memory, 16-25 ms at 10M rows)."""
    size = len(chosen) * per_group
    knl = kernel(queue.context, GroupEntriesSpec(dtype=values.dtype.name), "group_entries")
    wg = min(GATHER_WG, kernel_work_group_limit(knl, queue.device))
    got_values = cla.empty(queue, size, values.dtype)
    got_labels = cla.empty(queue, size, labels.dtype)
    knl(queue, (-(-size // wg) * wg,), (wg,), values.data, labels.data, np.int64(n),
        np.int64(per_group), cla.to_device(queue, chosen.astype(np.int32)).data,
        np.int64(len(chosen)), got_values.data, got_labels.data)
    return got_values.get(queue), got_labels.get(queue)


def largest(queue, values, labels, n, take, wg=None):
    """(values float64, rows int64, labels) of the *take* largest of the
    first *n* entries of the device array *values*, largest first, of
    equals the first row; *labels*: a device array read at those rows.
    A value among the *take* largest is at least the take-th largest group
    maximum (that many groups hold a value that large), so only the groups
    whose maximum reaches it are read, all of each, and every row of a tie
    is among them.  *wg*: group_maxima's."""
    take = min(take, n)
    if take <= 0:
        return np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int32)
    most, per_group = group_maxima(queue, values, n, min(GROUPS, n), wg)
    bound = np.partition(most, len(most) - take)[len(most) - take] if take < len(most) \
        else most.min()
    chosen = np.flatnonzero(most >= bound)
    if len(chosen) > len(most) // 4:   # many (ties): the whole vector, no gather
        chosen = np.arange(len(most))     # (the same places: every group in order)
        got_values, got_labels = values[:n].get(queue), labels[:n].get(queue)
    else:
        got_values, got_labels = group_entries(queue, values, labels, n, per_group, chosen)
    # what reaches the take-th largest, then a sort of only that (np.lexsort of
    # the groups' 76k entries took 8 ms)
    cut = len(got_values) - take
    at = np.flatnonzero(got_values >= np.partition(got_values, cut)[cut])
    rows = chosen[at // per_group] * per_group + at % per_group
    inside = rows < n
    at, rows = at[inside], rows[inside]
    reached = got_values[at].astype(np.float64)
    first = np.lexsort((rows, -reached))[:take]
    return reached[first], rows[first], got_labels[at[first]]
