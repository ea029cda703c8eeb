#!/usr/bin/env bash
# The two-thread figure of an earlier commit and of this one, measured side by side:
# builds <base> (in a git worktree, release, scratch path .build-experiments/ at the
# repository's root) and this working tree (release, .build/), then runs
# `justlog bench --only concurrency` with each, interleaved, <runs> times (default 12),
# and prints, per side, the aggregate ratio (min, median, max), the median of the
# median-round ratios, the calls/s of one thread and of two, and the literal's ratio
# (the machine's own, the control: when it is far below ~1.9 the run was disturbed).
#
# One run of the figure swings by ±0.3 on this 2-core VM; interleaving puts both
# sides under the same disturbances, and the medians of a dozen runs are what to compare.
#
# Usage: Benchmarks/experiments/ab-concurrency.sh <base-commit> [runs]
set -euo pipefail
base=${1:?usage: ab-concurrency.sh <base-commit> [runs]}
runs=${2:-12}
root=$(git rev-parse --show-toplevel)
tree=$(mktemp -d /tmp/justlog-ab.XXXXXX)
cleanup() { git -C "$root" worktree remove --force "$tree" >/dev/null 2>&1 || rm -rf "$tree"; }
trap cleanup EXIT
git -C "$root" worktree add --detach "$tree" "$base" >/dev/null
scratch="$root/.build-experiments"
(cd "$tree" && swift build -c release --product justlog --scratch-path "$scratch" 2>&1 | tail -1) >&2
(cd "$root" && swift build -c release --product justlog 2>&1 | tail -1) >&2
run() { # side
    if [[ $1 == base ]]; then
        LD_LIBRARY_PATH="$scratch/release" "$scratch/release/justlog" bench --only concurrency
    else
        LD_LIBRARY_PATH="$root/.build/release" "$root/.build/release/justlog" bench --only concurrency
    fi
}
results=$(mktemp)
for ((index = 1; index <= runs; index++)); do
    for side in base head; do
        # "concurrency, 2 threads ÷ 1: documented call 1.42× (median round 1.58×; 1652379 → 2335884 calls/s), literal alone 1.86× (…)"
        line=$(run "$side")
        fields=$(sed -E 's/.*documented call ([0-9.]+)× \(median round ([0-9.]+)×; ([0-9]+) → ([0-9]+) calls\/s\), literal alone ([0-9.]+)×.*/\1 \2 \3 \4 \5/' <<<"$line")
        echo "$side $fields" | tee -a "$results" >&2
    done
done
echo
for side in base head; do
    awk -v side="$side" -v commit="$([[ $side == base ]] && echo "$base" || echo "working tree")" '
        $1 == side { aggregate[++n] = $2; round[n] = $3; one[n] = $4; two[n] = $5; literal[n] = $6 }
        function sorted(a, n,   i, j, t) { for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t } }
        function median(a, n) { return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2 }
        END {
            sorted(aggregate, n); sorted(round, n); sorted(one, n); sorted(two, n); sorted(literal, n)
            printf "%s (%s): documented call %.2f / %.2f / %.2f (min / median / max aggregate), median round %.2f, calls/s %d → %d; literal %.2f (%d runs)\n",
                side, commit, aggregate[1], median(aggregate, n), aggregate[n], median(round, n), median(one, n), median(two, n), median(literal, n), n
        }
    ' "$results"
done
rm -f "$results"
