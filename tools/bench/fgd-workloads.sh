#!/usr/bin/env bash
# The FGD protocol's arrival sequences for the trace's other workloads
# (docs/benchmarks.md §5b): for each seed, the simulator's shuffle and
# inflation to 130% of the cluster's GPUs, and its node order (which
# depends on the random draws the workload took), by the generator shipped
# with the data (../shared/data/fgd-protocol/seqgen, Go; checked against the
# simulator's log). Output: DIR/seq_<workload>_sNN.csv and
# DIR/nodes_<workload>_sNN.csv, read by
#   gpushare-bench pack --protocol fgd --dir DIR --workload <workload>
#
#   tools/bench/fgd-workloads.sh [DIR] [WORKLOAD...]
#     DIR: default build-rel/fgd-workloads; WORKLOAD: default gpushare100
#     multigpu50 (any openb_pod_list_<name>.csv of the trace)
# Before writing anything, the default workload of seed 42 is regenerated
# and compared with the shipped seq_default_s42.csv and nodes_s42.csv.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
shared=${GS_SHARED:-$root/../shared}
proto=$shared/data/fgd-protocol
trace=$shared/data/alibaba-gpu-v2023
out=${1:-$root/build-rel/fgd-workloads}
shift || true
workloads=("$@")
[ ${#workloads[@]} -eq 0 ] && workloads=(gpushare100 multigpu50)
gpus=6212 # the node list's GPUs

if ! command -v go >/dev/null 2>&1; then
  for d in /usr/local/go/bin /usr/lib/go/bin; do
    [ -x "$d/go" ] && PATH="$d:$PATH" && break
  done
fi
command -v go >/dev/null 2>&1 || { echo "fgd-workloads: no Go toolchain" >&2; exit 1; }
[ -d "$proto/seqgen" ] || { echo "fgd-workloads: no generator at $proto/seqgen" >&2; exit 1; }

mkdir -p "$out"
gen="$out/.seqgen"
(cd "$proto/seqgen" && GOFLAGS=-mod=mod go build -o "$gen" .)

# the generator reproduces what is shipped
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$gen" "$trace/openb_pod_list_default.csv" 42 1.3 "$gpus" \
  "$trace/openb_node_list_gpu_node.csv" "$tmp/nodes.csv" >"$tmp/seq.csv"
cmp -s "$tmp/seq.csv" "$proto/seq_default_s42.csv" ||
  { echo "fgd-workloads: the generator does not reproduce seq_default_s42.csv" >&2; exit 1; }
cmp -s "$tmp/nodes.csv" "$proto/nodes_s42.csv" ||
  { echo "fgd-workloads: the generator does not reproduce nodes_s42.csv" >&2; exit 1; }

for w in "${workloads[@]}"; do
  in="$trace/openb_pod_list_$w.csv"
  [ -f "$in" ] || { echo "fgd-workloads: no $in" >&2; exit 1; }
  for seed in $(seq 42 51); do
    "$gen" "$in" "$seed" 1.3 "$gpus" "$trace/openb_node_list_gpu_node.csv" \
      "$out/nodes_${w}_s$seed.csv" >"$out/seq_${w}_s$seed.csv"
  done
  echo "fgd-workloads: $w: seeds 42-51 in $out"
done
