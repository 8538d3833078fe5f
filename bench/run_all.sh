#!/usr/bin/env bash
# Every benchmark against the local YARN, then the tables and plots (bench/results/).
#
#   bash bench/run_all.sh           # the full set: seed job x5, N up to 64, recovery x3
#   bash bench/run_all.sh --quick   # smoke test: 1 repetition, N up to 16 (bench/results-quick/)
#
# Needs the local cluster (`tfyarn cluster up`) and the bench extra (pip install -e '.[bench]').
# For N = 32 and 64 it starts a second, bench-owned local YARN with 64 vcores per NodeManager
# (bench/private_cluster.py) and stops it afterwards; the shared cluster is never touched.
set -euo pipefail

cd "$(dirname "$0")/.."
. .venv/bin/activate
eval "$(tfyarn cluster env)"
tfyarn cluster status >/dev/null || { echo "the local YARN is not up: tfyarn cluster up" >&2; exit 3; }

mode="${1:-full}"
# current = this checkout; before = tfyarn before its start-up/recovery fixes (BEFORE_REV in
# bench/variants.py).
variants="${TFYARN_BENCH_VARIANTS:-before,current}"
export TFYARN_BENCH_REUSE_VARIANTS=1
rm -rf "${TFYARN_BENCH_SCRATCH:-/tmp/tfyarn-bench}/variants"
if [ "$mode" = "--quick" ]; then
  out=bench/results-quick
  seed_runs=1; sizes=2,4,8,16; light_runs=1; recovery_runs=1; cluster=shared
  mirror_runs=1; checkpoint_mb=1,10,100
else
  out=bench/results
  seed_runs=5; sizes=2,4,8,16,32,64; light_runs=3; recovery_runs=3; cluster=auto
  mirror_runs=3; checkpoint_mb=1,10,100,500
fi
mkdir -p "$out"

echo "== 1 + 4. seed job, floors (a) and (b): $seed_runs run(s) each"
python -m bench.seed_job --runs "$seed_runs" --variants "$variants" --out "$out"
echo "== 2 + 4. rendezvous at scale: N = $sizes, $light_runs run(s) each"
python -m bench.rendezvous --n "$sizes" --runs "$light_runs" --variants "$variants" \
  --cluster "$cluster" --out "$out"
echo "== 3. recovery: $recovery_runs run(s) each"
python -m bench.recovery --runs "$recovery_runs" --variants "$variants" --out "$out"
echo "== 5. HDFS: mirror and restore per checkpoint size ($checkpoint_mb MB), a mirroring process's RSS"
# The cluster's own cost (start-up time, daemons' RSS) needs a throwaway cluster:
# TFYARN_CLUSTER_DIR=<unused dir> TFYARN_CLUSTER_PORT_OFFSET=1200 python -m bench.hdfs_mirror --cluster-cost
python -m bench.hdfs_mirror --runs "$mirror_runs" --sizes "$checkpoint_mb" --out "$out"
echo "== tables and plots"
python -m bench.report --results "$out" | tee "$out/report.md"
