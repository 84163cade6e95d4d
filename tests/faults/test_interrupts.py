"""Ctrl-C during a fit: KeyboardInterrupt within a pass's time, on one device
and over two (the threads that drive them), and the process fits again
afterwards; the command line exits 130 with one line."""
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import split_or_skip

SCRIPT = """
import os, signal, sys, threading, time
import numpy as np
import oclclust as oc
X = np.random.default_rng(0).standard_normal((200000, 16)).astype(np.float32)
devices = oc.sub_devices(oc.select_devices(sys.argv[1])[0], [1, 1]) if sys.argv[2] == "2" \\
    else sys.argv[1]
threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
start = time.perf_counter()
try:
    oc.KMeans(32, n_init=1, max_iter=100000, tol=0, random_state=0, devices=devices).fit(X)
    print("not interrupted")
except KeyboardInterrupt:
    print(f"interrupted after {time.perf_counter() - start:.1f} s")
km = oc.KMeans(3, n_init=1, random_state=0, devices=devices).fit(X[:500])
print("fits again", km.cluster_centers_.shape)
"""


@pytest.mark.parametrize("count", [1, 2], ids=["one-device", "two-sub-devices"])
def test_ctrl_c_interrupts_a_fit_and_the_process_goes_on(count, profile):
    if count == 2:
        split_or_skip(profile)
    proc = subprocess.run([sys.executable, "-c", SCRIPT, profile.platform, str(count)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("interrupted after"), proc.stdout
    assert float(lines[0].split()[2]) < 20
    assert lines[1] == "fits again (3, 16)"


def test_ctrl_c_on_the_command_line_is_one_line(profile, tmp_path):
    X = np.random.default_rng(0).standard_normal((200000, 16)).astype(np.float32)
    np.save(tmp_path / "x.npy", X)
    env = dict(os.environ)
    env.pop("OCLCLUST_DEVICES", None)
    proc = subprocess.Popen([sys.executable, "-m", "oclclust", "fit", str(tmp_path / "x.npy"),
                             "-k", "32", "--max-iter", "100000", "--tol", "0",
                             "--devices", profile.platform],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    time.sleep(8)       # imported, data read, iterating (a 1M-iteration fit)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
