#!/usr/bin/env bash
# Where an end-to-end case's CPU time goes, thread by thread, user and kernel: runs
# `justlog bench --only <case> --events <events>` (release build of this tree; default
# throughput_file_fields, 8,000,000 events), reads every thread's user and system time
# from /proc/<pid>/task/<tid>/stat every 0.1 s while it runs, and prints the last values
# of each thread that used any, in seconds and in ns per event. Linux only.
#
# Which thread is which: the caller is the process's first (tid = pid); the pipeline's
# is the busiest other one. For the kernel functions behind a thread's system time:
#   perf record -e cpu-clock -F 2000 -g -o /tmp/perf.data .build/release/justlog bench --only <case> --events <events>
#   perf report -i /tmp/perf.data --tid <tid> --no-children --sort dso,sym --stdio -g none
#
# Usage: Benchmarks/experiments/thread-times.sh [case] [events]
# JUSTLOG_BIN=<path to justlog> runs that build instead (nothing is built).
set -euo pipefail
case=${1:-throughput_file_fields}
events=${2:-8000000}
root=$(git rev-parse --show-toplevel)
bin=${JUSTLOG_BIN:-}
if [[ -z $bin ]]; then
    (cd "$root" && swift build -c release --product justlog 2>&1 | tail -1) >&2
    bin="$root/.build/release/justlog"
fi
ticks=$(getconf CLK_TCK)
output=$(mktemp)
samples=$(mktemp)
trap 'rm -f "$output" "$samples"' EXIT
LD_LIBRARY_PATH="$(dirname "$bin")" "$bin" bench --only "$case" --events "$events" >"$output" 2>&1 &
pid=$!
while kill -0 "$pid" 2>/dev/null; do
    for task in /proc/"$pid"/task/*; do
        # Read by the shell itself: a `cat` per thread and sample would take the cores being measured.
        read -r stat <"$task/stat" 2>/dev/null || continue
        read -r name <"$task/comm" 2>/dev/null || continue
        # After the command's closing parenthesis: state is field 1, utime 12, stime 13.
        read -r -a fields <<<"${stat##*) }"
        echo "${task##*/} ${name// /_} ${fields[11]} ${fields[12]}" >>"$samples"
    done
    sleep 0.1
done
wait "$pid" || { cat "$output" >&2; exit 1; }
cat "$output"
awk -v ticks="$ticks" -v events="$events" -v pid="$pid" '
    { user[$1] = $3; kernel[$1] = $4; name[$1] = $2 }
    END {
        printf "%-8s %-16s %9s %9s %12s %12s\n", "tid", "name", "user s", "system s", "user ns/ev", "system ns/ev"
        for (tid in user) {
            if (user[tid] + kernel[tid] == 0) continue
            label = tid == pid ? name[tid] " (caller)" : name[tid]
            printf "%-8s %-16s %9.2f %9.2f %12.0f %12.0f\n", tid, label, user[tid] / ticks, kernel[tid] / ticks,
                user[tid] / ticks * 1e9 / events, kernel[tid] / ticks * 1e9 / events
        }
    }' "$samples" | sort -k1,1n
