#!/usr/bin/env bash
# An end-to-end rate of an earlier commit and of this working tree, measured side by side:
# builds <base> (in a git worktree, release, scratch path .build-experiments/ at the
# repository's root) and this working tree (release, .build/), then runs
# `justlog bench --only <case> --events <events>` with each, interleaved, <runs> times
# (default 8 runs of throughput_file_fields, 4,000,000 events), and prints per side
# min / median / max events/s.
#
# One run swings by a fifth on this 2-core VM; interleaving puts both sides under the
# same disturbances: compare the medians.
#
# Usage: Benchmarks/experiments/ab-throughput.sh <base-commit> [runs] [case] [events]
set -euo pipefail
base=${1:?usage: ab-throughput.sh <base-commit> [runs] [case] [events]}
runs=${2:-8}
case=${3:-throughput_file_fields}
events=${4:-4000000}
root=$(git rev-parse --show-toplevel)
tree=$(mktemp -d /tmp/justlog-ab.XXXXXX)
results=$(mktemp)
output=$(mktemp)
cleanup() {
    git -C "$root" worktree remove --force "$tree" >/dev/null 2>&1 || rm -rf "$tree"
    rm -f "$results" "$output"
}
trap cleanup EXIT
git -C "$root" worktree add --detach "$tree" "$base" >/dev/null
scratch="$root/.build-experiments"
(cd "$tree" && swift build -c release --product justlog --scratch-path "$scratch" 2>&1 | tail -1) >&2
(cd "$root" && swift build -c release --product justlog 2>&1 | tail -1) >&2
run() { # side: prints the rate, or the run's output on stderr and fails
    local directory="$root/.build/release"
    [[ $1 == base ]] && directory="$scratch/release"
    if ! LD_LIBRARY_PATH="$directory" "$directory/justlog" bench --only "$case" --events "$events" >"$output" 2>&1; then
        echo "ab-throughput.sh: the $1 side failed:" >&2
        cat "$output" >&2
        return 1
    fi
    sed -nE "s/^$case: ([0-9]+) events\/s$/\1/p" "$output"
}
for ((index = 1; index <= runs; index++)); do
    for side in base head; do
        rate=$(run "$side")
        [[ -n $rate ]] || { echo "ab-throughput.sh: the $side side printed no rate:" >&2; cat "$output" >&2; exit 1; }
        echo "$side $rate" | tee -a "$results" >&2
    done
done
echo
for side in base head; do
    sort -n -k2 <(awk -v side="$side" '$1 == side' "$results") | awk -v side="$side" -v name="$case" \
        -v commit="$([[ $side == base ]] && echo "$base" || echo "working tree")" '
        { rate[NR] = $2 }
        END {
            median = NR % 2 ? rate[(NR+1)/2] : (rate[NR/2] + rate[NR/2+1]) / 2
            printf "%s (%s): %s %.2f / %.2f / %.2f M events/s (min / median / max, %d runs)\n",
                side, commit, name, rate[1] / 1e6, median / 1e6, rate[NR] / 1e6, NR
        }'
done
