#!/usr/bin/env bash
# Run the test suite and the k-means benchmark on a lent NVIDIA GPU host (the
# device tool's machine: Python 3.12, no network, pyopencl carried as wheels in
# .whl/, see README "GPU host").  Usage: bash tools/device_run.sh [bench args...]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 2
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
# NVIDIA's OpenCL driver is there but not registered; PoCL's CPU device too if present
mkdir -p /tmp/icd && echo /usr/lib/libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd
[ -f /etc/OpenCL/vendors/pocl.icd ] && cp /etc/OpenCL/vendors/pocl.icd /tmp/icd/
export OCL_ICD_VENDORS=/tmp/icd
out=${OUT:-/tmp/out}; mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
python3 -m oclclust devices 2>&1 | tee "$out/devices.txt"
platform=$(python3 -c 'import pyopencl as cl; print(next(p.name for p in cl.get_platforms() if "NVIDIA" in p.name))')
OCLCLUST_TEST_PLATFORM=$platform timeout 300 python3 -m pytest -q -p no:cacheprovider tests \
    --deselect tests/test_package.py --deselect tests/test_oclgrind.py 2>&1 | tee "$out/tests.txt" | tail -n 30
python3 bench/kmeans.py --devices NVIDIA "$@" 2>&1 | tee "$out/bench.txt"
