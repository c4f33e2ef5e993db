#!/usr/bin/env bash
# Runs the libFuzzer targets of a GS_FUZZ build for a bounded time each.
#   test/fuzz/run.sh BUILD_DIR SECONDS [TARGET...]     (default: every target)
# Each target starts from its seed corpus (test/fuzz/corpus/<t>, read-only)
# and its kept crash inputs (test/fuzz/regressions/<t>); inputs it finds go to
# BUILD_DIR/fuzz-work/<t>/corpus, crash inputs to BUILD_DIR/fuzz-work/<t>/.
# Exits 1 if any target crashed, leaked, failed a check or timed out; the
# crashing input is named in the output (keep it under regressions/<t>/).
# FUZZ_JOBS=N runs N targets at a time (default 1).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: run.sh BUILD_DIR SECONDS [TARGET...]}
secs=${2:?usage: run.sh BUILD_DIR SECONDS [TARGET...]}
shift 2
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(args bind pod node alloc topo_json topo_text quantity yaml config kubeconfig watch status
           list_peek preempt agent dra)
fi

dict_for() {
  case $1 in
    topo_json|topo_text) echo topo.dict ;;
    yaml|config|kubeconfig) echo yaml.dict ;;
    quantity) echo quantity.dict ;;
    *) echo json.dict ;;
  esac
}

run_one() { # target → 0 ok, 1 finding
  local t=$1 bin="$build/test/fuzz/fuzz_$1" work="$build/fuzz-work/$1"
  mkdir -p "$work/corpus"
  if [ ! -x "$bin" ]; then
    echo "fuzz $t: $bin missing (build with -DGS_FUZZ=ON --target fuzz)" >&2
    return 1
  fi
  local start=$SECONDS rc
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -dict="$here/dict/$(dict_for "$t")" -artifact_prefix="$work/" \
      "$work/corpus" "$here/corpus/$t" "$here/regressions/$t" >"$work/log" 2>&1
  rc=$?
  local execs
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -1)
  if [ $rc -ne 0 ]; then
    echo "fuzz $t: FAILED after $((SECONDS - start)) s (exit $rc); log $work/log"
    grep -E '^==[0-9]+==ERROR|SUMMARY|fuzz check failed|^artifact_prefix|Test unit written' \
      "$work/log" | head -8 | sed 's/^/  /'
    return 1
  fi
  echo "fuzz $t: ok, ${execs:-?} runs in $((SECONDS - start)) s, corpus $(ls "$work/corpus" | wc -l)"
  return 0
}

fail=0
jobs_max=${FUZZ_JOBS:-1}
if [ "$jobs_max" -le 1 ]; then
  for t in "${targets[@]}"; do run_one "$t" || fail=1; done
else
  pids=()
  for t in "${targets[@]}"; do
    run_one "$t" & pids+=($!)
    while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do sleep 0.2; done
  done
  for p in "${pids[@]}"; do wait "$p" || fail=1; done
fi
exit $fail
