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

work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
sklearn_modules=(sklearn.cluster.tests.test_k_means sklearn.mixture.tests.test_gaussian_mixture
                 sklearn.cluster.tests.test_dbscan sklearn.cluster.tests.test_hdbscan)

# One pytest run ($1: its label, then the command): its output goes to the job's log, one
# result line "label<TAB>rc<TAB>pytest's closing line" to the job's results.
run_pytest() {
  local label=$1; shift
  "$@" 2>&1 | tee "$joblog.run" >>"$joblog"; local rc=${PIPESTATUS[0]}
  # pytest's closing line, e.g. "3 failed, 120 passed, 2 skipped in 41.2s"; rc 5 = nothing collected.
  local line; line=$(grep -E '^(=+ )?([0-9]+ [a-z]+|no tests ran).* in [0-9.]+s' "$joblog.run" | tail -n 1)
  printf '%s\t%s\t%s\n' "$label" "$rc" "$line" >>"$jobres"
}

# One runtime: the suite, then scikit-learn's own test modules with our estimators in their
# place (sklearn_job), unless the side job runs those ($4: whether this run takes them).
# PYTHONSAFEPATH keeps the repo root off sys.path, so the tests import the *installed*
# oclclust (as users do) rather than the source tree.
# The oclgrind check runs its kernels on the simulator, its own platform, whatever
# OCLCLUST_TEST_PLATFORM says: it runs once (a second run would check the same thing),
# beside the runtimes' runs (oclgrind_job), or in the last runtime's run where pytest
# arguments were given ($3: whether this run takes it).
runtime_job() {
  local key=$1 name=$2 last=$3 own_sklearn=$4; shift 4
  local once=(); $last || once=(--ignore tests/passes/test_oclgrind.py)
  # checks that do not depend on the runtime (marker one_runtime: the host's code, the
  # package, the docs' examples, which the docs build runs on PoCL too, the command line's
  # refusals; fits over both CPU runtimes at once, whichever is under test) run on Intel's
  # alone: in Intel's run, or beside it in the side job
  # Of covering tests, PoCL runs the cases that give each value (or pair of values) of
  # their parameters (the others are marked breadth): compiling kernels is most of its run
  if [ "$key" = pocl ] && grep -qxF "Intel(R) OpenCL" <<<"$platforms"; then
    once+=(-m "not one_runtime and not breadth")
  elif [ "$key" = intel ] && $side; then
    once+=(-m "not one_runtime" --ignore tests/faults)   # (tests/faults: faults_job)
  fi
  echo "=== $key: OCLCLUST_TEST_PLATFORM='$name' pytest -q --durations=30 tests ${once[*]}${*:+ $*} ===" >>"$joblog"
  OCLCLUST_TEST_PLATFORM=$name PYTHONSAFEPATH=1 run_pytest "$key" \
    "$py" -m pytest -q --durations=30 tests "${once[@]}" "$@"
  if $own_sklearn; then sklearn_job "$key" "$name"; fi
}

# scikit-learn's own test modules on one runtime, oclclust's estimators in their place
# (tests/sklearn_suite: the plugin, its exclusion list and its strict known failures;
# their skips are scikit-learn's own: array libraries it can test against, not installed).
sklearn_job() {
  local key=$1 name=$2
  echo "=== $key: scikit-learn's test modules, oclclust substituted: ${sklearn_modules[*]} ===" >>"$joblog"
  OCLCLUST_TEST_PLATFORM=$name PYTHONSAFEPATH=1 SKLEARN_RUN_FLOAT32_TESTS=1 \
    PYTHONPATH=tests/sklearn_suite run_pytest "$key sklearn-suite" \
    "$py" -m pytest -q -p oclclust_substitute -p no:cacheprovider --pyargs "${sklearn_modules[@]}"
}

# The checks marked one_runtime alone, on Intel's runtime (the side job's share of the suite).
one_runtime_job() {
  echo "=== intel one_runtime: OCLCLUST_TEST_PLATFORM='Intel(R) OpenCL' pytest -q --durations=30 tests --ignore tests/passes/test_oclgrind.py -m one_runtime ===" >>"$joblog"
  OCLCLUST_TEST_PLATFORM="Intel(R) OpenCL" PYTHONSAFEPATH=1 run_pytest "intel one_runtime" \
    "$py" -m pytest -q --durations=30 tests --ignore tests/passes/test_oclgrind.py -m one_runtime
}

# Intel's run of tests/faults (not one_runtime), the rest of Intel's run being the side
# job's: the two streams' lengths evened out.
faults_job() {
  echo "=== intel faults: OCLCLUST_TEST_PLATFORM='Intel(R) OpenCL' pytest -q --durations=30 tests/faults -m 'not one_runtime' ===" >>"$joblog"
  OCLCLUST_TEST_PLATFORM="Intel(R) OpenCL" PYTHONSAFEPATH=1 run_pytest "intel faults" \
    "$py" -m pytest -q --durations=30 tests/faults -m "not one_runtime"
}

# The oclgrind check alone (the simulator is single-threaded: a core of its own while the
# runtimes' runs take the others), on Intel's platform name as the runtime runs give it.
oclgrind_job() {
  echo "=== oclgrind: pytest -q tests/passes/test_oclgrind.py ===" >>"$joblog"
  OCLCLUST_TEST_PLATFORM="Intel(R) OpenCL" PYTHONSAFEPATH=1 run_pytest oclgrind \
    "$py" -m pytest -q tests/passes/test_oclgrind.py
}

# The documentation, with warnings as errors; its examples run (on PoCL: one runtime is
# enough to show they run, and the suites cover both).
docs_job() {
  echo "=== docs: tools/docs.sh (python -m sphinx -W, into build/docs) ===" >>"$joblog"
  if ! "$py" -c 'import sphinx, numpydoc, sphinx_gallery' 2>/dev/null; then
    printf 'docs\tmissing\t\n' >>"$jobres"
  elif OCLCLUST_DEVICES="Portable Computing Language" PYTHONSAFEPATH=1 MPLBACKEND=Agg \
      PYTHON="$py" bash tools/docs.sh >>"$joblog" 2>&1; then
    printf 'docs\t0\t\n' >>"$jobres"
  else printf 'docs\t1\t\n' >>"$jobres"; fi
}

# With no pytest arguments, where Intel's runtime and oclgrind are: PoCL's run, Intel's
# run of tests/faults and scikit-learn's modules on Intel's runtime (once: they check the
# estimators' contract, which our suite checks on both runtimes), and beside them, one
# after another in a side job, the oclgrind check, the rest of Intel's run, the
# one_runtime checks (on Intel's platform) and the docs: two streams of about equal length
# on the 2 cores (stop 61's local run: PoCL's 40.8 min and both scikit-learn suites, 5.3,
# beside oclgrind 8.9, docs, Intel 30.9 and one_runtime 4.7: 47.5 min; CI 49.5. Stop 62's,
# with the docs in the first stream: PoCL 37.3, Intel's tests/faults 4.3 and its
# scikit-learn suite beside oclgrind 10.2, Intel 23.1 and one_runtime 6.4). A cold run is mostly kernel compilation,
# a thread at a time: measured on 2 cores, a cold PoCL and a cold Intel selection (71 and
# 29 s alone) took 79 and 29 s at once. (Stop 56's CI ran PoCL's 47.5 min, then Intel's
# 17.6, beside a side job of 30: 68 min; stop 57's, PoCL's 40.4 and its scikit-learn
# suite 2.9 beside the side job's oclgrind 9.1, docs, Intel 28.3, one_runtime 4.1 and
# Intel's scikit-learn suite 1.6: 45 min.)
# Otherwise the two runtimes run one after the other (OCLCLUST_TEST_JOBS=2: at once).
# PoCL's run leaves part of the second core idle: measured on 2 cores (load ~1.8), a PoCL
# test selection of 16 s alone took 17.4 s beside PoCL's scikit-learn modules (17 s alone;
# 17.7 s for both, against 33 s one after the other), 19.7 s beside Intel's (29-32 s
# against 20 s) and 17.4 s beside the one_runtime checks (22.7 s against 17.4 s); beside
# scikit-learn's test_k_means on PoCL, 35 s for both against 52 s (load ~4).
side=false
if [ "$#" -eq 0 ] && grep -qxF "Intel(R) OpenCL" <<<"$platforms" && command -v oclgrind >/dev/null
then
  side=true
  : >"$work/oclgrind.log"; : >"$work/oclgrind.res"
  (
    joblog=$work/oclgrind.log jobres=$work/oclgrind.res
    oclgrind_job
    runtime_job intel "Intel(R) OpenCL" false false
    one_runtime_job; docs_job
  ) &
fi
jobs=()
for entry in "pocl=Portable Computing Language" "intel=Intel(R) OpenCL"; do
  key=${entry%%=*}; name=${entry#*=}
  [ "$key" = intel ] && $side && continue   # in the side job
  if ! grep -qxF "$name" <<<"$platforms"; then
    missing "platform '$name' not found"; printf '%s\tmissing\t\n' "$key" >"$work/$key.res"
    continue
  fi
  last=true
  { $side || { [ "$key" = pocl ] && grep -qxF "Intel(R) OpenCL" <<<"$platforms"; }; } && last=false
  jobs+=("$key"); : >"$work/$key.log"; : >"$work/$key.res"
  (
    joblog=$work/$key.log jobres=$work/$key.res
    own_sklearn=true; $side && own_sklearn=false   # (scikit-learn's modules: Intel's alone)
    runtime_job "$key" "$name" "$last" "$own_sklearn" "$@"
    if [ "$key" = intel ] && ! $side; then docs_job; fi
    if $side; then faults_job; sklearn_job intel "Intel(R) OpenCL"; fi
  ) &
  pid=$!
  # the first job's log streams as it grows (CI shows progress); the others print at the end
  [ "${#jobs[@]}" -eq 1 ] && { tail -n +1 -f "$work/$key.log" --pid=$pid 2>/dev/null & }
  [ "${OCLCLUST_TEST_JOBS:-1}" = 2 ] || wait "$pid"
done
if ! grep -qxF "Intel(R) OpenCL" <<<"$platforms"; then   # the docs still build
  (joblog=$work/docs.log jobres=$work/docs.res; : >"$joblog"; : >"$jobres"; docs_job) &
  jobs+=(docs)
fi
wait

count() { grep -oE "[0-9]+ $1" <<<"$line" | awk '{n += $1} END {print n + 0}'; }   # "N word" in $line
passed=0; failed=0; skipped=0; ran=0; summary=()
for key in pocl intel oclgrind docs; do
  [ -f "$work/$key.log" ] && [ "$key" != "${jobs[0]:-}" ] && cat "$work/$key.log"
  [ -f "$work/$key.res" ] || continue
  while IFS=$'\t' read -r label rc line; do
    if [ "$label" = docs ]; then
      case $rc in
        0) summary+=("docs: ok (build/docs/html)") ;;
        missing) missing "the docs extra is not installed (bash tools/setup.sh --test installs it)"
                 summary+=("docs: MISSING") ;;
        *) summary+=("docs: FAILED (sphinx -W)"); status=1 ;;
      esac
      continue
    fi
    [ "$rc" = missing ] && { summary+=("$label: MISSING"); continue; }
    p=$(count passed); f=$(( $(count failed) + $(count 'errors?') )); s=$(count skipped)
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
    case $label in *sklearn-suite) ;; *) ran=$((ran + 1)) ;; esac
    # A run where nothing passed (all skipped, say) measured nothing: count it as a failure too.
    if [ "$rc" -eq 0 ] && [ "$p" -gt 0 ]; then summary+=("$label: ok (${line:-no summary})")
    else summary+=("$label: FAILED (pytest exit $rc: ${line:-no summary})"); status=1; fi
  done <"$work/$key.res"
done

echo "=== summary ==="
printf '%s\n' "${summary[@]}"
[ "$ran" -gt 0 ] || { echo "test: no OpenCL CPU platform found; run: bash tools/setup.sh --test" >&2; status=1; }
echo "$passed passed, $failed failed, $skipped skipped$([ "$status" -eq 0 ] || echo ' -- FAILED')"
exit "$status"
