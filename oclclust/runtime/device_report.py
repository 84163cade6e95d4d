"""The devices for people: a compact table (one line a device) and each
device's details, as ``oclclust devices [-v]`` and ``oc.show_devices()``
print them."""
import dataclasses
import sys

from .devices import DISCOVERY_ERRORS, list_devices, no_opencl_error
from .profiles import GENERIC_TERMS

# the widest a name column may be: a table line stays under 100 characters
NAME_WIDTH = {"device": 28, "platform": 22}
# fields that are neither reported counts nor terms (shown by the table and header)
_NAMING = ("platform", "name", "vendor", "type", "driver_version", "platform_index",
           "device_index", "profile_entries", "term_values", "sub_device")


def size_text(nbytes):
    """*nbytes* in B, KiB, MiB, GiB or TiB (one decimal above bytes)."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if nbytes < 1024 or unit == "TiB":
            return f"{nbytes:.0f} {unit}" if unit == "B" else f"{nbytes:.1f} {unit}"
        nbytes /= 1024


def _clip(text, width):
    return text if len(text) <= width else text[:width - 3] + "..."


def device_table(profiles):
    """The lines of a table of *profiles*, one a device: its index (for
    ``devices=[oc.list_devices()[i]]``), name, platform, type, compute
    units, global and local memory, and double precision."""
    head = ("#", "device", "platform", "type", "units", "memory", "local", "fp64")
    rows = [(str(i), _clip(p.name, NAME_WIDTH["device"]),
             _clip(p.platform, NAME_WIDTH["platform"]), p.type, str(p.compute_units),
             size_text(p.global_mem_size), size_text(p.local_mem_size),
             "yes" if p.fp64 else "no") for i, p in enumerate(profiles)]
    widths = [max(len(row[c]) for row in [head, *rows]) for c in range(len(head))]
    left = {1, 2, 3}   # the names and the type read from the left, numbers from the right

    def line(cells):
        return "  ".join(c.ljust(w) if i in left else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    return [line(head)] + [line(row) for row in rows]


def device_details(index, profile):
    """The lines describing one device in full: what it reports, its
    resolved profile terms and budgets, the devices.yaml entries it matched."""
    p, fields = profile, dataclasses.asdict(profile)
    reported = []
    for key, value in fields.items():
        if key in GENERIC_TERMS or key in _NAMING:
            continue
        memory = key.endswith("_size") and key != "max_work_group_size"
        reported.append(f"{key}={value}" + (f" ({size_text(value)})" if memory else ""))
    return [f"[{index}] {p.name}",
            f"    platform  {p.platform} (platform {p.platform_index}, device {p.device_index})",
            f"    type      {p.type}, vendor {p.vendor}, driver {p.driver_version}",
            "    reported  " + ", ".join(reported),
            "    profile   " + ", ".join(f"{k}={fields[k]}" for k in GENERIC_TERMS),
            "    terms     " + ", ".join(f"{k}={v}" for k, v in p.term_values.items()),
            f"    budgets   local memory {size_text(p.local_memory_budget)}, "
            f"global memory {size_text(p.memory_budget)}",
            "    matched   " + (", ".join(p.profile_entries) or "no devices.yaml entry")]


def device_report(profiles, errors, verbose=False):
    """The lines ``oclclust devices`` prints: a count, the table (or each
    device's details when *verbose*) and the platforms skipped."""
    lines = [f"OpenCL devices: {len(profiles)}"]
    if profiles and verbose:
        for i, p in enumerate(profiles):
            lines += [""] + device_details(i, p)
    elif profiles:
        lines += device_table(profiles)
    return lines + [f"skipped: {msg}" for msg in errors]


def show_devices(verbose=False, file=None):
    """Print the OpenCL devices oclclust can use, one line a device (every
    reported value, profile term and matched devices.yaml entry with
    *verbose*), as ``oclclust devices [-v]`` does.

    Parameters
    ----------
    verbose : bool, default=False
        Print each device's details instead of the table.
    file : file-like, default=None
        Where to print (sys.stdout when None).

    Returns
    -------
    None
        The table is printed, not returned.

    See Also
    --------
    list_devices : the same devices as DeviceProfile objects.

    Examples
    --------
    >>> import oclclust as oc
    >>> oc.show_devices()   # doctest: +SKIP
    OpenCL devices: 1
    #  device    platform                     type  units  memory    local    fp64
    0  pthread   Portable Computing Language  cpu       2  21.5 GiB  1.0 MiB  yes
    """
    profiles = list_devices()
    lines = device_report(profiles, list(DISCOVERY_ERRORS), verbose)
    if not profiles:
        lines.append(str(no_opencl_error()))
    print("\n".join(lines), file=sys.stdout if file is None else file)
