<%doc>
GMM initial responsibilities made on the device: one-hot rows, written in
the layout the M kernels read (k x n, component-major, as gmm_estep's
store_resp), so an initialisation never builds an n x k matrix on the host.
Reads spec: wg, from_labels.

from_labels: row i belongs to component labels[i] (k-means' labels; a label
outside 0..k-1 leaves the row all zero).  Else each component j has one row,
rows[j] (k-means++ / random_from_data: this chunk's local row of component j,
outside 0..n-1 when another chunk or rank holds it); a row chosen by several
components is one in each of them.
A work-item per row writes its k entries, neighbouring rows side by side
(coalesced on GPUs, vector stores on CPUs); every entry is written, 1 or 0.
It also writes each row's own component (own; the tensor-core M kernel,
gmm_mma_mstep.cl.mako, sums a component's own rows about its mean): its
label, or the first component whose row it is, or -1 for a row of none: it
owns nothing (all its entries are 0), and naming component 0 put every such
row in that component's block of the own kernel (gmm_mma_own.cl.mako: one
work-group adding a chunk's every row, 68 ms of the 1M x 128 x 1024
random_from_data initial statistics on the H200).
</%doc>
<%inherit file="/prelude.cl.mako"/>

__kernel __attribute__((reqd_work_group_size(${wg}, 1, 1)))
void gmm_onehot(__global real_t *restrict resp,         /* k x n */
                const long n, const int k,
                __global const int *restrict labels,    /* n (from_labels) */
                __global const long *restrict rows,     /* k (else) */
                __global int *restrict own)             /* n */
{
    const long i = get_global_id(0);
    if (i >= n)
        return;
% if from_labels:
    const int label = labels[i];
    for (int j = 0; j < k; ++j)
        resp[(long)j * n + i] = j == label ? (real_t)1 : (real_t)0;
    own[i] = label;
% else:
    int first = -1;
    for (int j = 0; j < k; ++j) {
        const int mine = rows[j] == i;
        resp[(long)j * n + i] = mine ? (real_t)1 : (real_t)0;
        first = first < 0 && mine ? j : first;
    }
    own[i] = first;
% endif
}
