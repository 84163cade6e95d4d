"""Rows kept on a device at 2 bytes a value (float16, or bfloat16 from
ml_dtypes) widened to float32 a chunk at a time (pairs with
templates/widen/): what a packed shard (parallel/shard.py) feeds the passes,
which compute in float32."""
import dataclasses

import numpy as np

from ..runtime.codegen import Spec, kernel


@dataclasses.dataclass(frozen=True)
class WidenSpec(Spec):
    template = "widen/widen_rows.cl.mako"
    packed: str = "float16"


def widen_rows(queue, src, first, count, dst, packed, wait_for=None):
    """Values first ... first + count of the packed device buffer *src*
    (uint16 elements) as float32 into device array *dst*; the event."""
    spec = WidenSpec(dtype="float32", acc_double=False, packed=packed)
    wg = 256
    return kernel(queue.context, spec, "widen_rows")(
        queue, (-(-count // wg) * wg,), (wg,), src.data, np.int64(first), np.int64(count),
        dst.data, wait_for=wait_for)
