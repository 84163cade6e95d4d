#!/usr/bin/env bash
# On a lent NVIDIA GPU host (the device tool's machine: Python 3.12, no network,
# pyopencl carried as wheels in .whl/): run the test suite on the NVIDIA
# platform, or the k-means benchmark.
# Usage: bash tools/device_run.sh tests [pytest args] | bench [bench/kmeans.py per-device args]
#                                 | multi [bench/devices.py kmeans args]
#                                 | mpi [bench/devices.py mpi args]
#                                 | run SCRIPT [args]   (any python script, same set-up)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 2
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
# mpi4py's wheel loads the host's Open MPI there; its mpiexec refuses root unless told
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# NVIDIA's OpenCL driver is there but not registered; PoCL's CPU device too if present
mkdir -p /tmp/icd && echo /usr/lib/libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd
[ -f /etc/OpenCL/vendors/pocl.icd ] && cp /etc/OpenCL/vendors/pocl.icd /tmp/icd/
export OCL_ICD_VENDORS=/tmp/icd
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
mode=${1:-tests}; shift
case $mode in
  tests)
    python3 -m oclclust devices
    platform=$(python3 -c 'import pyopencl as cl
print(next(p.name for p in cl.get_platforms() if "NVIDIA" in p.name))')
    # the oclgrind and packaging tests do not involve the GPU (and need tools absent there)
    OCLCLUST_TEST_PLATFORM=$platform python3 -m pytest -q -p no:cacheprovider tests \
        --ignore tests/passes/test_oclgrind.py --ignore tests/test_package.py "$@" ;;
  bench)
    python3 bench/kmeans.py per-device --devices NVIDIA "$@" ;;
  multi)
    python3 bench/devices.py kmeans "$@" ;;
  mpi)
    python3 bench/devices.py mpi "$@" ;;
  run)
    python3 "$@" ;;
  *) echo "usage: $0 tests|bench|multi|mpi|run [args]" >&2; exit 2 ;;
esac
