"""The layout of the "mma" Lloyd variant's split centres, as
templates/lloyd_mma/lloyd_mma_split.cl.mako documents it, and the check of a
device's split against it: used by tests/passes/test_lloyd_mma.py and the
oclgrind exerciser oclgrind_ex_mma.py (both find this folder on sys.path).
"""
import numpy as np
import pyopencl.array as cla

from oclclust.passes.lloyd import LloydSpec
from oclclust.passes.lloyd_mma import rounded, split_centers, tile_words


def slot_dims(spec):
    """kp x dp / 2: the first dimension of each uint4 slot, as
    lloyd_mma_split.cl.mako documents its layout (the second is 4 on)."""
    swizzle = 4 if spec.dp // 8 % 2 == 0 else 0
    p = np.arange(spec.dp // 2)
    s = p[None, :] ^ (swizzle * (np.arange(spec.kp)[:, None] & 1))
    return s // 4 * 8 + s % 4


def tf32(v):
    """float32 to TF32 bits: to nearest, ties away from zero."""
    return (v.view(np.uint32) + np.uint32(0x1000)) & np.uint32(0xFFFFE000)


def bf16(v):
    """float32 to bf16 bits (the upper half): to nearest, ties to even."""
    bits = v.view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint32)


def bf16_slot_dims(spec):
    """kp x dp / 8: the first dimension of each uint4 slot of the bf16
    layout (lloyd_mma_split.cl.mako): 32 (s / 4) + 2 (s % 4); its words hold
    that + (0, 1), (8, 9), (16, 17), (24, 25)."""
    swizzle = 4 if spec.dp // 32 % 2 == 0 else 0
    p = np.arange(spec.dp // 8)
    s = p[None, :] ^ (swizzle * (np.arange(spec.kp)[:, None] & 1))
    return s // 4 * 32 + 2 * (s % 4)


def check_split(queue, C, precision="float32"):
    """Split *C* (k x d float32) on *queue*'s device for *precision*; assert
    the words are the documented layout's, and a fast mode's rounding terms
    (||c~_j||, ||c_j - c~_j||; zero on padding) numpy's to float32's sums."""
    k, d = C.shape
    pad = 32 if precision == "bf16" else 8
    dp = -(-d // pad) * pad
    spec = LloydSpec(variant="mma", dtype="float32", d=d, k=k, kp=-(-k // 16) * 16, dp=dp,
                     precision=precision)
    tiles = cla.empty(queue, tile_words(spec), np.uint32)
    terms = cla.empty(queue, 2 * spec.kp, np.float32)
    split_centers(queue, spec, cla.to_device(queue, C.ravel()), tiles, terms)
    if precision != "float32":
        kept = rounded(precision, C).astype(np.float64)
        want = np.zeros((spec.kp, 2))
        want[:k] = np.stack([np.linalg.norm(kept, axis=1), np.linalg.norm(C - kept, axis=1)], 1)
        np.testing.assert_allclose(terms.get().reshape(-1, 2), want, rtol=2e-6,
                                   atol=1e-30)
    if precision == "tf32":
        return   # the float32 layout, its big parts read
    padded = np.zeros((spec.kp, dp), np.float32)
    padded[:k, :d] = C
    rows = np.arange(spec.kp)[:, None]
    if precision == "bf16":
        got = tiles.get().reshape(spec.kp, dp // 8, 4)
        dims = bf16_slot_dims(spec)
        for word, off in enumerate((0, 8, 16, 24)):
            lo, hi = padded[rows, dims + off], padded[rows, dims + off + 1]
            np.testing.assert_array_equal(got[..., word], bf16(lo) | (bf16(hi) << 16))
            # the value kept is v to 2^-8 relative: the bf16 products' operands
            kept = (got[..., word] << 16).view(np.float32)
            assert np.all(np.abs(kept - lo) <= 2.0 ** -8 * np.abs(lo))
        return
    got = tiles.get().reshape(spec.kp, dp // 2, 4)
    dims = slot_dims(spec)
    for half in range(2):
        v = padded[rows, dims + 4 * half]
        big = tf32(v)
        np.testing.assert_array_equal(got[..., 2 * half], big)
        np.testing.assert_array_equal(got[..., 2 * half + 1], tf32(v - big.view(np.float32)))
        # big + small is v to 2^-21 relative: the 3xTF32 products' accuracy
        total = got[..., 2 * half:2 * half + 2].view(np.float32).astype(np.float64).sum(-1)
        assert np.all(np.abs(total - v) <= 2.0 ** -21 * np.abs(v))
