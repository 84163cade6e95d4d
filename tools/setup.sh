#!/usr/bin/env bash
# Prepare this machine for oclclust: OpenCL CPU runtimes (PoCL from apt, Intel's from PyPI),
# oclgrind, and a .venv at the repo root with oclclust installed (non-editable, as users get it).
# Idempotent: a second run skips what is present and only reinstalls the project itself.
# Outside this checkout it changes only what is missing: apt packages, and where no registration
# of Intel's CPU runtime works, /opt/oclclust/intel-opencl-rt-VERSION (the runtime's files, hard
# links to .venv's) and /etc/OpenCL/vendors/intel-cpu.icd naming it; it says what it wrote.
# Usage: bash tools/setup.sh [--test]     (--test: also install the test extra)
set -euo pipefail
cd "$(dirname "$0")/.."

test_extra=
case "${1:-}" in
  --test) test_extra="test" ;;
  "") ;;
  *) echo "usage: bash tools/setup.sh [--test]" >&2; exit 2 ;;
esac

# the tests exercise every optional extra (and build the docs), so --test installs them all
extras=${test_extra:+$test_extra,formats,plot,progress,dask,docs,}mpi

say()  { echo "setup: $*"; }
warn() { echo "setup: WARNING: $*" >&2; }
sudo=; [ "$(id -u)" = 0 ] || sudo=sudo
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_WARN_SCRIPT_LOCATION=1

# 1. System packages. apt is slow and needs the network, so touch it only when something is missing.
pkgs=(pocl-opencl-icd ocl-icd-libopencl1 clinfo oclgrind)
python3 -c 'import ensurepip' 2>/dev/null || pkgs+=(python3-venv)   # Debian's python3 ships venv without pip
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "apt-get install ${missing[*]}"
  { $sudo apt-get update -qq &&
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  } || warn "apt-get failed for: ${missing[*]} (PoCL and/or oclgrind may be missing)"
fi

# 2. The virtual environment.
if [ ! -x .venv/bin/python ]; then
  say "creating .venv"
  python3 -m venv .venv
fi
py=.venv/bin/python

# 3. Intel's CPU runtime, registered with the ICD loader (/etc/OpenCL/vendors) for the whole
# machine. A registration that works already (this script's from another checkout, or Intel's
# own packages) is left as it is: nothing is downloaded or changed. Otherwise the runtime (a
# 225 MB wheel) is installed into .venv, linked (or copied) from there to a folder of its own
# outside any checkout, $intel_home, and registered from there: deleting this checkout does not
# unregister it. The registration is written only where none works, and what it changed is said.
icd=/etc/OpenCL/vendors/intel-cpu.icd
intel_registered() {   # the first ICD file whose Intel CPU library loads from where it names
  local f lib
  for f in /etc/OpenCL/vendors/*.icd; do
    [ -f "$f" ] || continue
    lib=$(head -n 1 "$f")
    case "$(basename "$lib")" in libintelocl.so*) ;; *) continue ;; esac
    # a bare name is the dynamic loader's to find; a path must exist
    if [ "${lib#/}" = "$lib" ] || [ -f "$lib" ]; then echo "$f -> $lib"; return 0; fi
  done
  return 1
}
if registered=$(intel_registered); then
  say "Intel's CPU runtime is registered already ($registered): left as it is"
else
  venv_lib=$PWD/.venv/lib
  if [ ! -f "$venv_lib/libintelocl.so" ]; then
    say "pip install intel-opencl-rt intel-cmplr-lib-rt (large download)"
    $py -m pip install -q intel-opencl-rt intel-cmplr-lib-rt || warn "Intel OpenCL CPU runtime could not be installed"
  fi
  if [ -f "$venv_lib/libintelocl.so" ]; then
    version=$($py -m pip show intel-opencl-rt 2>/dev/null | sed -n 's/^Version: //p')
    intel_home=${OCLCLUST_INTEL_OCL_DIR:-/opt/oclclust/intel-opencl-rt-${version:-unknown}}
    if [ ! -f "$intel_home/libintelocl.so" ]; then
      say "linking Intel's runtime (its wheels' files in .venv/lib) into $intel_home"
      $sudo mkdir -p "$intel_home"
      # the files the runtime's wheels and their dependencies put in .venv/lib; hard links
      # where the file system allows (no space taken; they outlive this checkout), else copies
      $py - "$venv_lib" <<'PY' | while IFS= read -r f; do
import importlib.metadata as md, re, sys
from pathlib import Path
lib = Path(sys.argv[1]).resolve()
todo, seen = ["intel-opencl-rt", "intel-cmplr-lib-rt"], set()
while todo:
    name = re.sub(r"[-_.]+", "-", todo.pop()).lower()
    if name in seen:
        continue
    seen.add(name)
    try:
        dist = md.distribution(name)
    except md.PackageNotFoundError:
        continue
    todo += [re.split(r"[ ;<>=!~\[(]", r, maxsplit=1)[0] for r in dist.requires or []
             if "extra ==" not in r]
    for f in dist.files or []:
        path = Path(f.locate()).resolve()
        if path.parent == lib:
            print(path)
PY
        $sudo ln -f "$f" "$intel_home/" 2>/dev/null || $sudo cp -a "$f" "$intel_home/"
      done
    fi
    if [ -f "$intel_home/libintelocl.so" ]; then
      # the library's RUNPATH ($ORIGIN) finds its companions beside it. The wheel's own .icd
      # names a bogus /opt/anaconda path, so the registration is written here.
      if [ -f "$icd" ]; then
        say "replacing $icd: it names $(head -n 1 "$icd"), which is not there"
      fi
      say "registering $intel_home/libintelocl.so in $icd (for every program on this machine;"
      say "  to undo: sudo rm $icd; sudo rm -r $intel_home)"
      $sudo mkdir -p /etc/OpenCL/vendors
      echo "$intel_home/libintelocl.so" | $sudo tee "$icd" >/dev/null || warn "could not write $icd"
    else
      warn "Intel's runtime could not be placed in $intel_home: it is not registered"
    fi
  fi
fi

# 4. The project, every run: pip always rebuilds a local directory, so code changes are picked
# up, while dependencies already satisfied are left alone (no download). mpi is optional for the
# library, so if that extra cannot be installed we warn and go on without it.
[ -f pyproject.toml ] || { echo "setup: ERROR: no pyproject.toml in $PWD: nothing to install" >&2; exit 1; }
say "pip install .[$extras]"
if ! $py -m pip install -q ".[$extras]"; then
  warn "pip install .[$extras] failed; retrying without the mpi extra"
  $py -m pip install -q ".${test_extra:+[$test_extra]}" \
    || { echo "setup: ERROR: pip install of the project failed (see pip's message above)" >&2; exit 1; }
fi

# 5. At least one OpenCL platform must be usable from the venv.
$py - <<'PY' || { echo "setup: ERROR: no OpenCL platform is usable from .venv" >&2; exit 1; }
import sys, pyopencl as cl
try:
    plats = cl.get_platforms()
except cl.Error as e:
    sys.exit(f"setup: {e}")
ok = 0
for p in plats:
    try:
        print(f"setup: platform {p.name!r}: {', '.join(d.name for d in p.get_devices())}")
        ok += 1
    except cl.Error as e:   # one broken runtime must not hide the others
        print(f"setup: WARNING: platform {p.name!r} has no usable device: {e}", file=sys.stderr)
sys.exit(0 if ok else 1)
PY
command -v oclgrind >/dev/null || warn "oclgrind is not on PATH (the kernel-check tests need it)"
say "done"
