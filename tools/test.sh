#!/usr/bin/env bash
# Run the test suite once per OpenCL CPU runtime (PoCL, Intel), and scikit-learn's own test
# modules with oclclust's estimators substituted (tests/sklearn_suite), build the documentation
# (docs/), then print one closing total line.
# The tests pick their platform from OCLCLUST_TEST_PLATFORM, set to the full platform name: a
# short "pocl" matches no PoCL platform or device name, and "intel" also matches PoCL's device
# name on Intel CPUs ("pthread-haswell-Intel(R) Xeon ..."). Extra arguments go to pytest.
# Under CI=true both runtimes must be present; elsewhere a missing one is a warning.
# Usage: bash tools/test.sh [pytest args...]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
py=.venv/bin/python
[ -x "$py" ] || { echo "test: no .venv here; run: bash tools/setup.sh --test" >&2; exit 2; }

strict=false; [ "${CI:-}" = true ] && strict=true
status=0
missing() {   # a required piece is absent: fatal under CI, a warning elsewhere
  if $strict; then echo "test: FAIL: $*" >&2; status=1; else echo "test: WARNING: $*" >&2; fi
}
command -v oclgrind >/dev/null || missing "oclgrind is not on PATH (needed by tests/passes/test_oclgrind.py)"

platforms=$($py -c '
import pyopencl as cl
try:
    print("\n".join(p.name for p in cl.get_platforms()))
except cl.Error:
    pass') || { echo "test: cannot import pyopencl from .venv" >&2; exit 2; }

log=$(mktemp); trap 'rm -f "$log"' EXIT
sklearn_modules=(sklearn.cluster.tests.test_k_means sklearn.mixture.tests.test_gaussian_mixture
                 sklearn.cluster.tests.test_dbscan sklearn.cluster.tests.test_hdbscan)
count() { grep -oE "[0-9]+ $1" <<<"$line" | awk '{n += $1} END {print n + 0}'; }   # "N word" in $line
passed=0; failed=0; skipped=0; ran=0; summary=()
for entry in "pocl=Portable Computing Language" "intel=Intel(R) OpenCL"; do
  key=${entry%%=*}; name=${entry#*=}
  if ! grep -qxF "$name" <<<"$platforms"; then
    missing "platform '$name' not found"; summary+=("$key: MISSING"); continue
  fi
  echo "=== $key: OCLCLUST_TEST_PLATFORM='$name' pytest -q tests${*:+ $*} ==="
  # PYTHONSAFEPATH keeps the repo root off sys.path, so the tests import the *installed* oclclust
  # (as users do) rather than the source tree.
  OCLCLUST_TEST_PLATFORM=$name PYTHONSAFEPATH=1 "$py" -m pytest -q tests "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}; ran=$((ran + 1))
  # pytest's closing line, e.g. "3 failed, 120 passed, 2 skipped in 41.2s"; rc 5 = nothing collected.
  line=$(grep -E '^(=+ )?([0-9]+ [a-z]+|no tests ran).* in [0-9.]+s' "$log" | tail -n 1)
  p=$(count passed); f=$(( $(count failed) + $(count 'errors?') )); s=$(count skipped)
  passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
  # A run where nothing passed (all skipped, say) measured nothing: count it as a failure too.
  if [ "$rc" -eq 0 ] && [ "$p" -gt 0 ]; then summary+=("$key: ok ($p passed, $s skipped)")
  else summary+=("$key: FAILED (pytest exit $rc: ${line:-no summary})"); status=1; fi

  # scikit-learn's own test modules with our estimators in their place (tests/sklearn_suite:
  # the plugin, its exclusion list and its strict known failures). Their skips are
  # scikit-learn's own (array libraries it can test against and that are not installed).
  echo "=== $key: scikit-learn's test modules, oclclust substituted: ${sklearn_modules[*]} ==="
  OCLCLUST_TEST_PLATFORM=$name PYTHONSAFEPATH=1 SKLEARN_RUN_FLOAT32_TESTS=1 \
    PYTHONPATH=tests/sklearn_suite "$py" -m pytest -q -p oclclust_substitute -p no:cacheprovider \
    --pyargs "${sklearn_modules[@]}" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  line=$(grep -E '^(=+ )?([0-9]+ [a-z]+|no tests ran).* in [0-9.]+s' "$log" | tail -n 1)
  p=$(count passed); f=$(( $(count failed) + $(count 'errors?') )); s=$(count skipped)
  passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
  if [ "$rc" -eq 0 ] && [ "$p" -gt 0 ]; then
    summary+=("$key sklearn-suite: ok ($line)")
  else summary+=("$key sklearn-suite: FAILED (pytest exit $rc: ${line:-no summary})"); status=1; fi
done

# The documentation, with warnings as errors; its examples run (on PoCL: one runtime is enough
# to show they run, and the suite above already covered both).
echo "=== docs: python -m sphinx -W docs ==="
if ! "$py" -c 'import sphinx, numpydoc, sphinx_gallery' 2>/dev/null; then
  missing "the docs extra is not installed (bash tools/setup.sh --test installs it)"
  summary+=("docs: MISSING")
elif OCLCLUST_DEVICES="Portable Computing Language" PYTHONSAFEPATH=1 MPLBACKEND=Agg \
    "$py" -m sphinx -W --keep-going -q -E -b html docs docs/_build/html; then
  summary+=("docs: ok (docs/_build/html)")
else
  summary+=("docs: FAILED (sphinx -W)"); status=1
fi

echo "=== summary ==="
printf '%s\n' "${summary[@]}"
[ "$ran" -gt 0 ] || { echo "test: no OpenCL CPU platform found; run: bash tools/setup.sh --test" >&2; status=1; }
echo "$passed passed, $failed failed, $skipped skipped$([ "$status" -eq 0 ] || echo ' -- FAILED')"
exit "$status"
