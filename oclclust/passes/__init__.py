"""One module per device pass.  Importing the package imports every module
that declares profile terms (runtime.profiles.declare_terms), so devices.yaml
is read with all of them known, whichever pass a program uses."""
from . import cmeans, distance_tile, ensemble, gmm, kdtree, linkage, lloyd  # noqa: F401
from . import linkage_rows, lloyd_update_specs, mst, pass_rates  # noqa: F401
