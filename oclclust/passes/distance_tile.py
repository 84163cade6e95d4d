"""The register tile of templates/distance_tile/distance_tile.cl.mako, from the Python
side: the spec fields of a kernel that imports the tile library
(TileFields, a mixin of its Spec) and the sizes their planners share.

The planners (lloyd_gemm.py, cmeans.py, gmm.py, linkage.py) take their
tiles from the profile's tile_* terms (TileTerms), which this module declares.
"""
import dataclasses

from ..runtime.profiles import declare_terms, term


@declare_terms
@dataclasses.dataclass(frozen=True)
class TileTerms:
    """The register tile of every tiled distance kernel (k-means' gemm and
    mma variants, c-means, the diagonal GMM E-step, the linkage matrix):
    rows x columns of a work-group's tile of the distance matrix, a
    work-item's reg_rows x reg_columns of it in registers, depth features
    per local-memory chunk, vector_width-wide local reads.  Named lloyd_*
    before the other passes shared them."""
    rows: int = term("tile_rows", 1, 1024, old_name="lloyd_tile_rows")
    columns: int = term("tile_columns", 1, 1024, old_name="lloyd_tile_centroids")
    reg_rows: int = term("tile_reg_rows", 1, 16, old_name="lloyd_reg_rows")
    reg_columns: int = term("tile_reg_columns", 1, 16, old_name="lloyd_reg_centroids")
    depth: int = term("tile_depth", 1, 256, old_name="lloyd_depth")
    vector_width: int = term("tile_vector_width", 1, 16, old_name="lloyd_vector_width")


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
    return min(profile.terms(TileTerms).depth, power_of_two_at_least(d))
