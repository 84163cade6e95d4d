"""Planning of the "blocked" Lloyd variant: register-blocked distances for
CPU runtimes (templates/lloyd_blocked/lloyd_blocked.cl.mako); LloydPass
(lloyd.py) runs it.

A work-item scores ``rb`` rows against a panel of ``cv`` vectors of ``vw``
centroids at a time, all rb x cv accumulators in registers, the centroids
packed panel by panel so each dimension's vectors are one contiguous load;
the sums follow the rowwise variant (a slab per work-item, rows in order).
A row's epilogue (its lanes' argmin, the winner's exact distance from the
K x D rows, its sums) runs in vectors too: at d = 32 it cost a fifth of the
distances as scalar loops.
"""
import dataclasses

import numpy as np

from ..runtime.profiles import declare_terms, term


@declare_terms
@dataclasses.dataclass(frozen=True)
class BlockedTerms:
    """``rows`` x ``vectors``: the rows a work-item scores together and the
    vectors of centroids (of the profile's native width) it scores them
    against per panel; ``unroll``: dimensions a step of the dot loop;
    ``chunk``: blocks of rows scored against a panel before the next one;
    ``items``: work-items a compute unit (0: the profile's
    groups_per_compute_unit), each a slab of sums: more of them balance a
    runtime's threads when other work holds a core."""
    rows: int = term("blocked_rows", 1, 16)
    vectors: int = term("blocked_vectors", 1, 8)
    unroll: int = term("blocked_unroll", 1, 32)
    chunk: int = term("blocked_chunk", 1, 64)
    items: int = term("blocked_items_per_unit", 0, 256)


def vector_width(profile, dtype):
    """The centroid vectors' width: the device's native vector, 2 to 16
    lanes, a power of two (the kernel halves the lanes to reduce them)."""
    lanes = min(16, max(2, profile.native_vector_bytes // np.dtype(dtype).itemsize))
    return 1 << (lanes.bit_length() - 1)


def vector_registers(profile):
    """Vector registers a CPU has for the block: 32 with 64-byte vectors
    (AVX-512), else 16 (AVX2, NEON)."""
    return 32 if profile.native_vector_bytes >= 64 else 16


def blocked_specs(profile, base, spec_class):
    """The profile's block, rows cut until its accumulators, a panel's
    vectors and a broadcast fit the vector registers, then smaller ones
    (fewer rows, then fewer vectors, never wider than k needs): a kernel too
    large for the device's build limits falls back to the next."""
    terms = profile.terms(BlockedTerms)
    vw = vector_width(profile, base["dtype"])
    cv = max(1, min(terms.vectors, -(-base["k"] // vw)))
    rows = terms.rows
    while rows > 1 and rows * cv + cv + 1 > vector_registers(profile):
        rows -= 1
    terms = dataclasses.replace(terms, rows=rows)
    seen = set()
    for rb, cv in ((terms.rows, cv), (max(1, terms.rows // 2), cv),
                   (max(1, terms.rows // 2), max(1, cv // 2)), (1, 1)):
        if (rb, cv) in seen:
            continue
        seen.add((rb, cv))
        kp = -(-base["k"] // (vw * cv)) * vw * cv
        yield spec_class(variant="blocked", vw=vw, kp=kp, wg=1, ppi=rb * terms.chunk, rb=rb,
                         nb=terms.chunk, cv=cv, unroll=max(1, min(terms.unroll, base["d"])),
                         **base)


def items_per_unit(profile, spec):
    """Work-items a compute unit of *spec*'s pass: the blocked variant's
    term (0 there, and for the other variants: groups_per_compute_unit)."""
    return profile.terms(BlockedTerms).items if spec.variant == "blocked" else 0


def pack_centers(centers, spec):
    """*centers* (k x d) as the kernel reads them: kp / (cv * vw) panels of
    d x (cv * vw) values, zero padding (their norms are +inf)."""
    k, d = centers.shape
    cb = spec.cv * spec.vw
    padded = np.zeros((spec.kp, d), np.dtype(spec.dtype))
    padded[:k] = centers
    return np.ascontiguousarray(padded.reshape(spec.kp // cb, cb, d).transpose(0, 2, 1)).ravel()
