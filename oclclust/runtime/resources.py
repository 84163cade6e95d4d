"""Where the shipped kernel sources and device profiles live.

In an installed package they are the sub-packages ``oclclust.templates``,
``oclclust.kernels_cl`` and ``oclclust.profiles`` (setup.cfg maps the
top-level folders there); in a source checkout used without installing, they
are the top-level folders themselves.
"""
import functools
import importlib.util
from pathlib import Path

_CHECKOUT = Path(__file__).resolve().parents[2]
_TOP_LEVEL = {"templates": "templates", "kernels_cl": "kernels_cl", "profiles": "."}


@functools.lru_cache(maxsize=None)
def resource_dir(name):
    """Folder of the shipped resource group *name* (templates, kernels_cl,
    profiles): found once a process (every fit reads the shipped profiles;
    find_spec searched the package's path each time, ~30 us a fit)."""
    spec = importlib.util.find_spec(f"oclclust.{name}")
    if spec is not None and spec.submodule_search_locations:
        return Path(list(spec.submodule_search_locations)[0])
    return _CHECKOUT / _TOP_LEVEL[name]


def template_dirs():
    return [str(resource_dir("templates")), str(resource_dir("kernels_cl"))]


def shipped_profiles_path():
    return resource_dir("profiles") / "devices.yaml"
