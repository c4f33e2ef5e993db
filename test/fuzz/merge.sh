#!/usr/bin/env bash
# Adds to the seed corpora (test/fuzz/corpus/<t>/) the inputs found by
# run.sh that reach coverage the seeds do not (libFuzzer -merge=1: existing
# seeds are kept, new files are named by their SHA-1).
#   test/fuzz/merge.sh BUILD_DIR [TARGET...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: merge.sh BUILD_DIR [TARGET...]}
shift
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(args bind pod node alloc topo_json topo_text quantity
                                     yaml config kubeconfig watch status)
for t in "${targets[@]}"; do
  work="$build/fuzz-work/$t/corpus"
  [ -d "$work" ] || { echo "merge $t: no $work (run run.sh first)"; continue; }
  before=$(ls "$here/corpus/$t" | wc -l)
  "$build/test/fuzz/fuzz_$t" -merge=1 "$here/corpus/$t" "$work" \
    >"$build/fuzz-work/$t/merge.log" 2>&1
  echo "merge $t: $before -> $(ls "$here/corpus/$t" | wc -l) inputs"
done
