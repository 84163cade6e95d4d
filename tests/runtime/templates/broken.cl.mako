<%doc>
Test-only template: inherits the shared prelude, then fails to compile (an
undeclared identifier), so a build failure can be provoked on purpose.
Reads spec: d.
</%doc>
<%inherit file="/prelude.cl.mako"/>
#define D ${d}

__kernel void broken(__global real_t *x)
{
    x[get_global_id(0)] = D * no_such_identifier;
}
