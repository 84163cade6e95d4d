"""Page-locked host memory: the staging of host <-> device copies.

A copy from pageable host memory is staged by the OpenCL runtime through a
bounce buffer of its own (NVIDIA: ~8 GB/s, and the in-order queue is held
meanwhile); from page-locked memory it is one DMA at the link's speed
(~55 GB/s on the lent H200's PCIe 5).  ALLOC_HOST_PTR buffers, mapped once
and kept mapped, are the portable way to get such memory from OpenCL: on
the CPU runtimes they are ordinary host memory and cost nothing extra.
"""
import numpy as np
import pyopencl as cl


def pinned_empty(queue, shape, dtype):
    """A host array in page-locked memory (kept mapped): a read into it is
    one DMA; into pageable memory NVIDIA's runtime stages it and holds the
    in-order queue ~50 us (H100)."""
    buf = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE | cl.mem_flags.ALLOC_HOST_PTR,
                    max(1, int(np.prod(shape))) * np.dtype(dtype).itemsize)
    host, _ = cl.enqueue_map_buffer(queue, buf, cl.map_flags.READ | cl.map_flags.WRITE, 0,
                                    shape, dtype, is_blocking=True)
    return host
