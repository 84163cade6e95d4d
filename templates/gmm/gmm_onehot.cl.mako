<%doc>
GMM initial responsibilities made on the device from k-means' labels:
one-hot rows, written in the layout the M kernels read (k x n,
component-major, as gmm_estep's store_resp), so an initialisation never
builds an n x k matrix on the host.
Reads spec: wg.

Row i belongs to component labels[i] (a label outside 0..k-1 leaves the row
all zero).  A work-item per row writes its k entries, neighbouring rows side
by side (coalesced on GPUs, vector stores on CPUs); every entry is written,
1 or 0.  It also writes each row's own component (own: its label; the
tensor-core M kernel, gmm_mma_mstep.cl.mako, sums a component's own rows
about its mean, and skips an own outside its block).  The inits of one row
a component (k-means++, random_from_data) need no responsibilities: each
component's statistics are its row's (cluster/mixture/mdl.row_stats).
</%doc>
<%inherit file="/prelude.cl.mako"/>

__kernel __attribute__((reqd_work_group_size(${wg}, 1, 1)))
void gmm_onehot(__global real_t *restrict resp,         /* k x n */
                const long n, const int k,
                __global const int *restrict labels,    /* n */
                __global int *restrict own)             /* n */
{
    const long i = get_global_id(0);
    if (i >= n)
        return;
    const int label = labels[i];
    for (int j = 0; j < k; ++j)
        resp[(long)j * n + i] = j == label ? (real_t)1 : (real_t)0;
    own[i] = label;
}
