#!/usr/bin/env bash
# scripts/slurm-sweep.sbatch without a cluster: (1) --submit with a fake `sbatch` that records its
# calls: an array of N tasks, then a merge that depends on it (afterok); (2) each task and the
# merge run as Slurm would run them (SLURM_ARRAY_TASK_ID/COUNT set, then SERVESIM_SWEEP_MERGE=1):
# the merged table must be byte-identical to `servesim sweep --jobs 1`.
# Usage: slurm_sweep.sh SERVESIM SOURCE_DIR
set -euo pipefail
servesim=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
grid=(--num-requests 12 --scheduler vllm-v0,chunked:256 --request-rate 4,8,16 --seed 0:1:1)

"$servesim" sweep "${grid[@]}" --jobs 1 --out ref.h5 --csv ref.csv >/dev/null

mkdir bin
cat >bin/sbatch <<'FAKE'
#!/usr/bin/env bash
echo "$*" >>"$SBATCH_LOG"
echo "$((1000 + $(wc -l <"$SBATCH_LOG")))"
FAKE
chmod +x bin/sbatch
export SBATCH_LOG=$work/sbatch.log SERVESIM=$servesim SWEEP_OUT=$work/out.h5 SWEEP_CSV=$work/out.csv
export SWEEP_ARGS="${grid[*]}"
PATH="$work/bin:$PATH" "$src/scripts/slurm-sweep.sbatch" --submit 5 >submit.txt
grep -q -- "--array=0-4" sbatch.log || { echo "no array of 5 tasks: $(cat sbatch.log)"; exit 1; }
grep -q -- "--dependency=afterok:1001" sbatch.log || { echo "no merge after the array: $(cat sbatch.log)"; exit 1; }
[ "$(wc -l <sbatch.log)" -eq 2 ] || { echo "expected 2 submissions"; exit 1; }

for id in 0 1 2 3 4; do
  SLURM_ARRAY_TASK_ID=$id SLURM_ARRAY_TASK_COUNT=5 SLURM_CPUS_PER_TASK=2 \
    "$src/scripts/slurm-sweep.sbatch" >"task$id.txt"
done
SERVESIM_SWEEP_MERGE=1 "$src/scripts/slurm-sweep.sbatch" >merge.txt
grep -q "12 of 12 points" merge.txt || { echo "merge: $(cat merge.txt)"; exit 1; }
cmp ref.h5 out.h5
cmp ref.csv out.csv
echo "slurm_sweep: 5 array tasks and the merge give the bytes of --jobs 1"
