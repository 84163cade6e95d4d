"""The register tile of templates/distance_tile.cl.mako, from the Python
side: the spec fields of a kernel that imports the tile library
(TileFields, a mixin of its Spec) and the sizes their planners share.

The planners (lloyd_gemm.py, cmeans_pass.py, gmm_pass.py, linkage_device.py)
take their tiles from the profile's lloyd_* terms: k-means' register tile.
"""
import dataclasses


@dataclasses.dataclass(frozen=True)
class TileFields:
    """``tiled``: distances as register tiles, tm x tn per work-group, rm x rn
    per work-item, kc features per local-memory chunk, vw-wide local reads."""
    tiled: bool = False
    tm: int = 1
    tn: int = 1
    rm: int = 1
    rn: int = 1
    kc: int = 1
    vw: int = 1


def power_of_two_at_least(v):
    return 1 << max(0, int(v) - 1).bit_length()


def power_of_two_at_most(v):
    return 1 << (max(1, int(v)).bit_length() - 1)


def chunk_depth(profile, d):
    """Features per local-memory chunk: the profile's, no more than d needs."""
    return min(profile.lloyd_depth, power_of_two_at_least(d))
