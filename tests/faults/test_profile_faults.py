"""Profile values inside the accepted ranges that used to crash or confuse a
fit: the c-means pass at tiny work-groups (PoCL's work-group compiler
asserted and killed the process: run in a subprocess), and a local memory
budget of zero."""
import os
import subprocess
import sys

import numpy as np
import pytest

import oclclust as oc
from oclclust.runtime.codegen import KernelBuildError

FIT = """
import numpy as np, oclclust as oc
X = np.random.RandomState(0).rand(500, 3)
m = oc.FuzzyCMeans(n_clusters=3, devices={platform!r}, random_state=0, max_iter=5).fit(X)
print("fitted", np.isfinite(m.cluster_centers_).all())
"""


@pytest.mark.parametrize("wg", [1, 2, 3])
def test_tiny_work_groups_fit_cmeans(profile, tmp_path, wg):
    """work_group_size 1 to 3 in a user's devices.yaml: the fit ends normally."""
    path = tmp_path / "devices.yaml"
    path.write_text(f"- {{work_group_size: {wg}}}\n")
    env = dict(os.environ, OCLCLUST_DEVICES_YAML=str(path))
    proc = subprocess.run([sys.executable, "-c", FIT.format(platform=profile.platform)],
                          capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["fitted", "True"]


def test_no_local_memory_names_the_setting(profile):
    """local_memory_fraction 0: the error says which budget nothing fits."""
    starved = profile.replace(local_memory_fraction=0.0)
    with pytest.warns(RuntimeWarning), \
            pytest.raises(RuntimeError, match="no OpenCL device left") as info:
        oc.FuzzyCMeans(n_clusters=3, devices=[starved]).fit(np.random.rand(100, 2))
    cause = info.value.__cause__
    assert isinstance(cause, KernelBuildError)
    assert "local memory budget of 0 bytes (local_memory_fraction=0.0" in str(cause)
