#!/usr/bin/env bash
# sweep and capacity under mpirun (issue 15):
#  1. `mpirun -n 3 servesim sweep` (rank 0 the queue, two ranks of 2 threads simulating) writes
#     the HDF5 and CSV bytes of `servesim sweep --jobs 1`;
#  2. `mpirun -n 3 servesim capacity` prints and writes what `capacity --jobs 1` does;
#  3. a rank killed mid-sweep (SIGKILL) ends the job; its journal keeps every finished point, and
#     running the sweep again (under mpirun) resumes from it and writes the same bytes.
# Usage: mpi_sweep.sh SERVESIM MPIEXEC
set -euo pipefail
servesim=$1
mpiexec=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
# Open MPI as root, more ranks than cores, and no single-copy shared memory (containers forbid the
# ptrace it needs). LeakSanitizer would report Open MPI's own allocations at exit.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
mpirun=("$mpiexec" --allow-run-as-root --oversubscribe -n 3)

# Half of these points cannot run (llama-2-13b does not fit an L4): error rows, not a stopped job.
grid=(--num-requests 15 --gpu l4 --max-model-len 4096 --model llama-3.1-8b,llama-2-13b
  --scheduler vllm-v0,chunked:256,vllm-v1:512 --request-rate 4,8,16 --seed 0:1:1)
"$servesim" sweep "${grid[@]}" --jobs 1 --out ref.h5 --csv ref.csv >ref.txt
"${mpirun[@]}" "$servesim" sweep "${grid[@]}" --jobs 2 --out mpi.h5 --csv mpi.csv >mpi.txt
cmp ref.h5 mpi.h5
cmp ref.csv mpi.csv
[ "$(grep -c "^sweep:" mpi.txt)" -eq 1 ] || { echo "rank 0 alone reports: $(cat mpi.txt)"; exit 1; }
grep -q "18 could not run" mpi.txt || { echo "error rows: $(cat mpi.txt)"; exit 1; }
echo "mpi_sweep: mpirun -n 3 writes the bytes of --jobs 1 ($(grep -o '[0-9]* run,' mpi.txt) $(grep -o '[0-9]* could not run' mpi.txt))"

# An error on every rank (a bad flag) or on rank 0 alone (another grid's journal) ends the whole
# job with its message instead of leaving the other ranks waiting; other commands refuse mpirun.
expect_failure() {  # WHAT COMMAND...: fails in time, with WHAT in its output
  local what=$1 status=0
  shift
  timeout 120 "$@" >fail.txt 2>&1 || status=$?
  [ "$status" -ne 0 ] && [ "$status" -ne 124 ] || { echo "status $status for: $*"; cat fail.txt; exit 1; }
  grep -q "$what" fail.txt || { echo "no '$what' in: $(cat fail.txt)"; exit 1; }
}
expect_failure "no-such-flag" "${mpirun[@]}" "$servesim" sweep --no-such-flag 1 --out x.h5
echo '{"grid_id":"0000000000000000","shard":"all"}' >foreign.h5.journal
expect_failure "belongs to another grid" "${mpirun[@]}" "$servesim" sweep "${grid[@]}" --out foreign.h5
expect_failure "only sweep and capacity" "${mpirun[@]}" "$servesim" run --num-requests 5
echo "mpi_sweep: errors on one rank or on all end the job with their message"

cap=(--num-requests 20 --scheduler vllm-v0,chunked:512 --gpu a100-80g,h100-sxm --slo ttft_p99_ms=500
  --rate-max 64 --rel-tol 0.1)
"$servesim" capacity "${cap[@]}" --jobs 1 --csv ref_cap.csv >ref_cap.txt
"${mpirun[@]}" "$servesim" capacity "${cap[@]}" --jobs 1 --csv mpi_cap.csv >mpi_cap.txt
cmp ref_cap.csv mpi_cap.csv
diff ref_cap.txt mpi_cap.txt
echo "mpi_sweep: mpirun -n 3 capacity gives the table of --jobs 1"

big=(--num-requests 1000 --scheduler vllm-v0,chunked:256 --request-rate 1:40:1 --seed 0:1:1)
"$servesim" sweep "${big[@]}" --jobs 2 --out ref_big.h5 >/dev/null
"${mpirun[@]}" "$servesim" sweep "${big[@]}" --jobs 1 --out kill.h5 >kill.txt 2>&1 &
job=$!
for _ in $(seq 6000); do  # up to 60 s for 2 journaled rows
  [ -f kill.h5.journal ] && [ "$(wc -l <kill.h5.journal)" -gt 2 ] && break
  sleep 0.01
done
[ -f kill.h5.journal ] || { echo "no journal appeared"; kill "$job"; exit 1; }
# Rank 1, a computing rank with a batch in hand (its environment names its rank).
victim=""
for pid in $(pgrep -f "servesim sweep .*kill.h5" || true); do
  if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=1"; then
    victim=$pid
  fi
done
[ -n "$victim" ] || { echo "no rank 1 to kill"; exit 1; }
kill -9 "$victim"
status=0
wait "$job" || status=$?
[ "$status" -ne 0 ] || { echo "the job survived a killed rank"; exit 1; }
[ ! -f kill.h5 ] || { echo "a table was written by a broken job"; exit 1; }
kept=$(($(wc -l <kill.h5.journal) - 1))
[ "$kept" -ge 2 ] || { echo "the journal lost rows: $kept"; exit 1; }
[ "$kept" -lt 160 ] || { echo "the rank died too late to test anything: $kept of 160 done"; exit 1; }
"${mpirun[@]}" "$servesim" sweep "${big[@]}" --jobs 1 --out kill.h5 >resume.txt
grep -Eq "[1-9][0-9]* already done" resume.txt || { echo "nothing resumed: $(cat resume.txt)"; exit 1; }
cmp ref_big.h5 kill.h5
[ ! -f kill.h5.journal ] || { echo "the journal outlived the sweep"; exit 1; }
echo "mpi_sweep: a killed rank lost none of the $kept points journaled of 160; resume wrote the bytes of --jobs 2"
