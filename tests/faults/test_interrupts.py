"""Ctrl-C during a fit: KeyboardInterrupt from inside the iterations, on one
device and over two (the threads that drive them), the process fits again
afterwards; the command line exits 130 with one line.  The signal is sent
from the fit's third iteration (a hook on lloyd_step), so a fast device
cannot finish the fit first."""
import subprocess
import sys

import numpy as np
import pytest

from conftest import split_or_skip

HOOK = """
import os, signal, sys
import oclclust.cluster.kmeans.lloyd_loop as loop
step, calls = loop.lloyd_step, [0]
def interrupted_step(*args, **kwargs):
    calls[0] += 1
    if calls[0] == 3:
        os.kill(os.getpid(), signal.SIGINT)
    return step(*args, **kwargs)
loop.lloyd_step = interrupted_step
"""

FIT = HOOK + """
import numpy as np
import oclclust as oc
X = np.random.default_rng(0).standard_normal((20000, 8)).astype(np.float32)
devices = oc.sub_devices(oc.select_devices(sys.argv[1])[0], [1, 1]) if sys.argv[2] == "2" \\
    else sys.argv[1]
try:
    oc.KMeans(16, n_init=1, max_iter=1000, tol=0, random_state=0, devices=devices).fit(X)
    print("not interrupted")
except KeyboardInterrupt:
    print(f"interrupted at iteration {calls[0]}")
km = oc.KMeans(3, n_init=1, random_state=0, devices=devices).fit(X[:500])
print("fits again", km.cluster_centers_.shape)
"""

CLI = HOOK + """
from oclclust.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("count", [1, 2], ids=["one-device", "two-sub-devices"])
def test_ctrl_c_interrupts_a_fit_and_the_process_goes_on(count, profile):
    if count == 2:
        split_or_skip(profile)
    proc = subprocess.run([sys.executable, "-c", FIT, profile.platform, str(count)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines() == ["interrupted at iteration 3", "fits again (3, 8)"], \
        proc.stdout


def test_ctrl_c_on_the_command_line_is_one_line(profile, tmp_path):
    X = np.random.default_rng(0).standard_normal((20000, 8)).astype(np.float32)
    np.save(tmp_path / "x.npy", X)
    proc = subprocess.run([sys.executable, "-c", CLI, "fit", str(tmp_path / "x.npy"), "-k", "16",
                           "--max-iter", "1000", "--tol", "0", "--devices", profile.platform],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 130, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and proc.stderr.strip() == "oclclust: interrupted", \
        proc.stderr
