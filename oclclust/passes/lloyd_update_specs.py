"""The specs of KMeans' device update (passes/lloyd_update.py; fuzzy
c-means' too: passes/cmeans_update.py): the new centres
(lloyd_new_centers.cl.mako), the summary the host reads
(lloyd_summary.cl.mako), and a small fit's whole update by one work-group
(lloyd_update_group.cl.mako: UpdateTerms, group_update_spec); the summary's
layout and the work-groups."""
import dataclasses

from ..runtime.codegen import Spec
from ..runtime.exact_fold import FOLD_BLOCKS
from ..runtime.profiles import declare_terms, term
from .distance_tile import power_of_two_at_most

EXACT = ()    # build options: IEEE products and sums (no -cl-mad-enable)


@dataclasses.dataclass(frozen=True)
class CentersSpec(Spec):
    """``layout`` "rows" (K x D: the tiled variant, and the mma variant's
    rows before their split), "columns" (D x KP: rowwise, gemm) or
    "panels" (KP / cb panels of D x cb: blocked, lloyd_blocked.pack_centers);
    ``rows``: also the K x D rows (gemm); ``packed``: the sums K x (D + 1)
    with each centre's weight last (fuzzy c-means: passes/cmeans_update.py);
    ``words``: the sums and weights as exact folds' words, rounded by the
    update itself (split-free passes)."""
    template = "lloyd_update/lloyd_new_centers.cl.mako"
    build_options = EXACT
    d: int = 1
    k: int = 1
    kp: int = 1
    layout: str = "rows"
    cb: int = 1
    rows: bool = False
    wg: int = 64
    packed: bool = False
    words: bool = False


@declare_terms
@dataclasses.dataclass(frozen=True)
class UpdateTerms:
    """``group`` 1: a small split-free fit's update by one work-group, one
    launch (GroupUpdateSpec: group_update_spec says which fits), instead
    of the block sums, the folds, new_centers and the summary apart."""
    group: int = term("lloyd_update_group", 0, 1)


# a fit's update is one work-group's where that group's work (its rows'
# distances, its folds' partials) is at most this many values: past it the
# group's own time outgrows the launches it saves (H200: 115 us an iteration
# at 100000 x 16, k=32, against 54 us for the four kernels apart)
GROUP_UPDATE_VALUES = 1 << 16


@dataclasses.dataclass(frozen=True)
class GroupUpdateSpec(CentersSpec):
    """The update as one work-group's launch (lloyd_update_group.cl.mako):
    the block sums, the folds, new_centers (``words``) and the summary, by
    the same code as their own kernels, so the same bits; *split*: the
    "mma" variant's split_centers too (its dp and precision)."""
    template = "lloyd_update/lloyd_update_group.cl.mako"
    wg: int = 256
    split: bool = False
    dp: int = 8
    precision: str = "float32"

    def template_args(self):
        return dict(super().template_args(), levels=self.wg.bit_length() - 1)


def group_update_spec(lloyd_pass, centers_spec):
    """The GroupUpdateSpec of *lloyd_pass*'s update (CentersSpec
    *centers_spec*, rounding its folds' words) where its profile asks for
    one (UpdateTerms) and the fit is small: unweighted rows (the block sums'
    products), the group's work at most GROUP_UPDATE_VALUES values and its
    folds' blocks within one fold's (FOLD_BLOCKS); else None."""
    lp = lloyd_pass
    part, k = lp.part, lp.k
    work = part.n + lp.partials * k * (part.d + 1)
    if not (centers_spec.words and part.profile.terms(UpdateTerms).group and not part.weighted
            and work <= GROUP_UPDATE_VALUES and lp.partials <= FOLD_BLOCKS):
        return None
    wg = power_of_two_at_most(min(256, part.profile.max_work_group_size))
    spec = lp.spec
    split = dict(split=True, dp=spec.dp, precision=spec.precision) if spec.variant == "mma" else {}
    return GroupUpdateSpec(**dict(dataclasses.asdict(centers_spec), wg=wg, **split))


@dataclasses.dataclass(frozen=True)
class SummarySpec(Spec):
    template = "lloyd_update/lloyd_summary.cl.mako"
    build_options = EXACT
    k: int = 1
    wg: int = 64

    def template_args(self):
        return dict(super().template_args(), levels=self.wg.bit_length() - 1)


GROUP_INERTIA_ARG, GROUP_RESULTS_ARG = 3, 24   # update_group's arguments set at each launch

# what summarize writes, in order
SHIFT, INERTIA, CHANGED, NONFINITE, EMPTY, RECHECKED = range(6)
RESULTS = 6


def update_work_group(profile):
    """new_centers' work-group: a centre an item, 64 at most."""
    return power_of_two_at_most(min(64, profile.max_work_group_size))


def summary_work_group(profile):
    """summarize's work-group.  A CPU runtime runs a work-group's items in
    turn, switching at each barrier: one item sums alone there (a group of
    many items made a small fit's iteration slow on Intel's runtime)."""
    return (1 if profile.type == "cpu" else
            power_of_two_at_most(min(256, profile.max_work_group_size)))
