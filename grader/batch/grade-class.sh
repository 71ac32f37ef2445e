#!/bin/bash
# grade-class.sh: grade a class on a Slurm cluster (printed by `grade slurm-script`).
# One array task per shard (`grade batch --shard K/N`, one GPU each), then `grade merge` as a job that waits for
# every task (afterok) and fails, naming them, when a submission has no row. On the login node:
#
#   bash grade-class.sh      submit tasks 1..SHARDS and the merge
#   bash grade-class.sh 3    submit task 3 again (after it failed, was cancelled or ran out of time: it grades
#                            only what it had not) and a new merge; several as 2,4 or 1-3
#
# Run it with bash, not sbatch: it submits itself. Each job runs with --export=NONE (nothing of the login
# shell's environment) and activates GRADER_ENV itself. Logs: OUT/slurm/. The gradebook: OUT/gradebook/.

# --- settings: `grade slurm-script`'s options fill the first six -----------------------------------------------
# the class: one .cu file or one folder per student, on a file system every node sees
CLASS=@CLASS@
# every shard's results, the reports, the logs (OUT/slurm/) and the merged gradebook (OUT/gradebook/)
OUT=@OUT@
# tasks 1..SHARDS, task K grading slice K of SHARDS: the one place the count is written
SHARDS=@SHARDS@
# at most this many tasks at once (2: sbatch --array=1-SHARDS%2); empty: no limit
MAX_RUNNING=@MAX_RUNNING@
# the Python environment where the grader is installed, activated in every job
GRADER_ENV=@GRADER_ENV@
# 1: a task that finds no GPU (rows no-gpu: static checks only) succeeds, so the merge runs (a cluster without GPUs)
NO_GPU_OK=@NO_GPU_OK@
# each task: one GPU, 4 CPUs, two workers at grade batch's --memory-limit (16 GiB), an hour (an H200 grades about
# 48 submissions a minute; the hour is for a shard of hostile files that each run to their limits)
TASK=(--gres=gpu:1 --cpus-per-task=4 --mem=32G --time=01:00:00)
# the merge: no GPU
MERGE=(--cpus-per-task=1 --mem=4G --time=00:15:00)
# added to every job, e.g. (--partition=gpu --account=course42)
SBATCH=()
# ---------------------------------------------------------------------------------------------------------------
set -euo pipefail
export PATH="${PATH:-/usr/local/bin:/usr/bin:/bin}"
LOGS="$OUT/slurm"
ME=grade-class.sh

activate() {  # the grader's environment: a venv's (or conda's) bin/activate, else its bin/ first on PATH
  if [ -f "$GRADER_ENV/bin/activate" ]; then
    set +u; . "$GRADER_ENV/bin/activate"; set -u
  else
    export PATH="$GRADER_ENV/bin:$PATH"
  fi
  if ! command -v grade > /dev/null; then
    echo "$ME: no \`grade\` command in $GRADER_ENV: set GRADER_ENV to the environment the grader is installed in" >&2
    exit 2
  fi
}

task() {  # array task K: shard K of SHARDS
  local k="$SLURM_ARRAY_TASK_ID" code=0
  if ! [[ "$k" =~ ^[0-9]+$ ]] || [ "$k" -lt 1 ] || [ "$k" -gt "$SHARDS" ]; then
    echo "$ME: array task $k is outside 1..$SHARDS, so it grades nothing: the tasks are 1..$SHARDS (SHARDS);" \
         "submit them with \`bash $ME\`, which passes --array=1-$SHARDS" >&2
    exit 2
  fi
  activate
  echo "$ME: task $k of $SHARDS on $(hostname): grade batch $CLASS --out $OUT --shard $k/$SHARDS"
  grade batch "$CLASS" --out "$OUT" --shard "$k/$SHARDS" || code=$?
  if [ "$code" = 3 ] && [ "$NO_GPU_OK" = 1 ]; then
    echo "$ME: no GPU on $(hostname): rows are no-gpu (static checks only); NO_GPU_OK=1 counts the task as done"
    exit 0
  fi
  [ "$code" = 3 ] && echo "$ME: no GPU on $(hostname) (grade batch exit 3): check TASK's --gres line" >&2
  exit "$code"
}

merge() {  # one gradebook, and exit 4 naming every submission or shard without a row
  activate
  grade merge "$OUT/gradebook" "$OUT" --expect "$CLASS" --shards "$SHARDS"
}

submit() {  # the tasks (all, or those named: 2,4 or 1-3) and the merge that waits for them
  local array="${1:-1-$SHARDS}" part lo hi tasks merge
  for part in ${array//,/ }; do
    lo="${part%-*}"; hi="${part#*-}"
    if ! [[ "$lo" =~ ^[0-9]+$ && "$hi" =~ ^[0-9]+$ ]] || [ "$lo" -lt 1 ] || [ "$hi" -gt "$SHARDS" ] \
       || [ "$lo" -gt "$hi" ]; then
      echo "$ME: tasks '$array': give tasks among 1..$SHARDS, as 3, 2,4 or 1-3 (nothing was submitted)" >&2
      exit 2
    fi
  done
  mkdir -p "$LOGS"
  tasks=$(sbatch --parsable --job-name=grade-class --array="$array${MAX_RUNNING:+%$MAX_RUNNING}" --export=NONE \
                 --output="$LOGS/%x-%A_%a.out" ${SBATCH[@]+"${SBATCH[@]}"} ${TASK[@]+"${TASK[@]}"} "$0")
  tasks="${tasks%%;*}"
  merge=$(sbatch --parsable --job-name=grade-merge --dependency="afterok:$tasks" --kill-on-invalid-dep=yes \
                 --export=NONE --output="$LOGS/%x-%j.out" ${SBATCH[@]+"${SBATCH[@]}"} \
                 ${MERGE[@]+"${MERGE[@]}"} "$0" merge)
  merge="${merge%%;*}"
  echo "tasks: job $tasks, array $array of 1..$SHARDS; merge: job $merge (runs once every task succeeded;" \
       "cancelled if one fails: then \`bash $ME K\` for that task)"
  echo "logs: $LOGS/; gradebook: $OUT/gradebook/"
}

if [ "${1:-}" = merge ]; then
  merge
elif [ -n "${SLURM_ARRAY_TASK_ID:-}" ]; then
  task
elif [ "${ENVIRONMENT:-}" = BATCH ]; then
  echo "$ME: submit it with \`bash $ME\` on the login node, not with sbatch: it submits its own tasks" >&2
  exit 2
else
  submit "$@"
fi
