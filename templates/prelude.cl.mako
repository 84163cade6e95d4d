<%doc>
Shared prelude every kernel inherits (<%inherit file="/prelude.cl.mako"/>).
Reads spec: real_t (C type of the data), fp64 (double needed), acc_double
(sums in double; else Kahan-compensated float).
</%doc>
% if fp64:
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
% endif
typedef ${real_t} real_t;
% if acc_double:
typedef double acc_t;
% else:
typedef float acc_t;
% endif
#define ACC_DOUBLE ${int(acc_double)}
<%include file="/accumulate.cl"/>
${next.body()}
