#!/usr/bin/env bash
# Where the callers' time goes in the concurrency figure's rounds: builds this commit with
# round-profile.patch applied (in a git worktree, release, scratch path .build-experiments/
# at the repository's root), then
#   1. runs `justlog bench --only concurrency` <runs> times (default 6) with JL_ROUNDCPU=1,
#      alternately with the callers pinned to cores of their own (the product's bench) and
#      left to the scheduler (JL_NOPIN=1, as before BENCHMARKS.md part 16), and prints each
#      run's round profile of the documented call: the callers' CPU time per call in the
#      one-thread and the two-thread rounds, each caller's share of the rounds on a CPU, the
#      other threads' share, the process's minor page faults per 1,000 calls, when the second
#      caller started and each ended, the spread of
#      the rounds' ratios; then the medians of the figure per side;
#   2. with --perf (needs `perf`), samples the callers (perf record -e cpu-clock, 10 kHz) in
#      only-one-thread rounds and in only-two-thread rounds (JL_ROUNDS=one|two, 4 M calls a
#      side) and prints, per function, the callers' samples per million calls in each, the
#      functions whose share grew most first: what a call costs more when two run at once.
# With --switches "JL_A JL_B …" it builds the commit that patch was written against (b6c5678,
# part 17; JUSTLOG_EXPERIMENT_BASE overrides), applies submission-switches.patch as well and, instead of
# 1 and 2, runs the product and each switch in turn (callers pinned), <runs> times,
# interleaved, printing per run and switch the callers' CPU time per call in one-thread →
# two-thread rounds (each caller's share on a CPU), the ratio, its median round and the
# literal's ratio (BENCHMARKS.md part 16's table of switches).
# The patches never go into the product. When one no longer applies, this script says so
# and stops.
#
# Usage: Benchmarks/experiments/round-profile.sh [runs] [--perf] [--switches "JL_A JL_B"]
set -euo pipefail
runs=6
perf=no
switches=""
while (($#)); do
    case $1 in
    --perf) perf=yes ;;
    --switches) switches=$2; shift ;;
    *) runs=$1 ;;
    esac
    shift
done
work=$(mktemp -d /tmp/justlog-rounds-data.XXXXXX)
cleanup_more() { rm -rf "$work"; }
here=$(cd "$(dirname "$0")" && pwd)
patches=("$here/round-profile.patch")
if [[ -n $switches ]]; then
    patches+=("$here/submission-switches.patch")
    experiment_base=${JUSTLOG_EXPERIMENT_BASE:-b6c56780b30bd71c481dfdbb71a1aaba513a2dba}
fi
source "$here/build-with-patches.sh" "${patches[@]}"

if [[ -n $switches ]]; then
    for ((run = 1; run <= runs; run++)); do
        for switch in none $switches; do
            if [[ $switch == none ]]; then set_switch=(); else set_switch=("$switch=1"); fi
            output=$(env "${set_switch[@]}" JL_ROUNDCPU=1 "$bin" bench --only concurrency 2>&1)
            cpu=$(sed -n '/^round profile of hot_path/,/^round profile of literal/p' <<<"$output" |
                grep -E 'one thread|two threads:' |
                sed -E 's/.*callers. CPU ([0-9]+) ns a call \(on a CPU ([0-9]+)% \+ ([0-9]+)%.*/\1 ns (\2% + \3%)/' |
                paste -sd' ' | sed 's/ ns (/ ns (/; s/) /) → /')
            ratio=$(grep '^concurrency' <<<"$output" |
                sed -E 's/.*documented call ([0-9.]+)× \(median round ([0-9.]+)×.*literal alone ([0-9.]+)×.*/\1, median round \2, literal \3/')
            echo "run $run, $switch: CPU a call $cpu | ratio $ratio"
        done
    done
    exit 0
fi

figures="$work/figures"
for ((run = 1; run <= runs; run++)); do
    for side in pinned unpinned; do
        if [[ $side == unpinned ]]; then pin=(JL_NOPIN=1); else pin=(); fi
        output=$(env "${pin[@]}" JL_ROUNDCPU=1 "$bin" bench --only concurrency 2>&1)
        echo "== run $run, callers $side"
        sed -n '/^round profile of hot_path/,/^round profile of literal/p' <<<"$output" | sed '$d'
        line=$(grep '^concurrency' <<<"$output")
        echo "$line"
        echo "$side $(sed -E 's/.*documented call ([0-9.]+)× \(median round ([0-9.]+)×.*literal alone ([0-9.]+)×.*/\1 \2 \3/' <<<"$line")" >>"$figures"
    done
done
python3 - "$figures" <<'EOF'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
for side in ("pinned", "unpinned"):
    values = [list(map(float, row[1:])) for row in rows if row[0] == side]
    print(f"{side}: documented call, aggregate median {statistics.median(v[0] for v in values):.2f} "
          f"(min {min(v[0] for v in values):.2f}, max {max(v[0] for v in values):.2f}), "
          f"median round {statistics.median(v[1] for v in values):.2f}; literal {statistics.median(v[2] for v in values):.2f} "
          f"({len(values)} runs)")
EOF

[[ $perf == yes ]] || exit 0
if ! command -v perf >/dev/null; then
    echo "round-profile.sh: --perf needs perf (apt-get install linux-perf)" >&2
    exit 1
fi
for kind in one two; do
    JL_ROUNDS=$kind perf record -q -e cpu-clock -F 10000 -o "$work/$kind.data" \
        "$bin" bench --only concurrency --iterations 4000000 >/dev/null 2>&1
done
python3 - "$work" <<'EOF'
import collections, re, subprocess, sys
work = sys.argv[1]
def report(data, *arguments):
    command = ["perf", "report", "-i", data, "-n", "--stdio", *arguments]
    return subprocess.run(command, capture_output=True, text=True).stdout
def callers(data):
    # The measuring thread is the process's first; the other caller, the last "justlog" thread started (in the
    # two-thread rounds only: in the others it sleeps).
    threads = []
    for line in report(data, "--sort", "pid").splitlines():
        match = re.match(r"\s+([\d.]+)%\s+(\d+)\s+(\d+):(\S+)", line)
        if match: threads.append((int(match.group(3)), match.group(4), float(match.group(1))))
    first = min(tid for tid, _, _ in threads)
    chosen = [first]
    if data.endswith("two.data"):
        chosen.append(max(tid for tid, name, share in threads if name == "justlog" and share >= 1 and tid != first))
    return ",".join(map(str, chosen))
def samples(data):
    text = report(data, "--tid", callers(data), "--sort", "sym")
    text = subprocess.run(["swift", "demangle", "--simplified"], input=text, capture_output=True, text=True).stdout
    counts = collections.Counter()
    for line in text.splitlines():
        match = re.match(r"\s+[\d.]+%\s+(\d+)\s+\[.\]\s+(.*)", line)
        if match: counts[match.group(2).strip()[:100]] += int(match.group(1))
    return counts
one, two = samples(f"{work}/one.data"), samples(f"{work}/two.data")
# The same number of rounds on each side: the two-thread side made twice the calls.
total_one, total_two = sum(one.values()), sum(two.values()) / 2
print(f"\ncallers' samples (100 µs each) per 2 M calls: one-thread rounds {total_one}, two-thread rounds {total_two:.0f} "
      "(both include each side's waits and drains between rounds, and the second caller's spin before a round)")
print("grew most with two threads (samples per 2 M calls: one thread, two threads, difference):")
for name in sorted(set(one) | set(two), key=lambda name: -(two[name] / 2 - one[name]))[:25]:
    print(f"  {one[name]:6d} {two[name] / 2:8.0f} {two[name] / 2 - one[name]:+7.0f}  {name}")
EOF
