#!/usr/bin/env bash
# Where a call's two-thread figure goes: builds the commit the patch was written against
# (b6c5678, part 17; JUSTLOG_EXPERIMENT_BASE overrides) with
# submission-switches.patch applied (in a git worktree, release, scratch path
# .build-experiments/ at the repository's root) and runs `justlog bench --only
# concurrency [--case <case>]` with each switch in turn, interleaved, <runs> times
# (default 8). <case> is a per-call case of `justlog bench` (default hot_path, the
# documented call; message_only is the submission with hardly any work of the
# caller's own beside it).
#
# The switches take parts of the fast lane's submission (PipelineQueue.submitJournaled
# and the journal's reservation, Spool.reserveRecord) away; what is left measures what
# those parts cost two threads:
#   (none)          the product as it is
#   JL_NOSUBMIT     the record is encoded and not submitted: no shared state at all
#   JL_LOCKONLY     the queue's lock and two counters, no journal
#   JL_NOSPOOLLOCK  the reservation without the spool's lock (the queue's covers it)
#   JL_NOCOMMIT     the reservation without the segment header's last-serial store
#   JL_NOFILLS      no count of the places being filled (an atomic add and subtract)
#   JL_NOSHARED     the last three at once
#   JL_IDLEWORKER   the pipeline's thread at SCHED_IDLE: runs only on an idle core
#   JL_PREFETCH     before taking the locks, the caller prefetches (for writing) the lines the
#                   reservation will write: the queue's, the spool's, the segment's, the stub's
#   JL_OWNSPOOL     each thread appends its record to a spool of its own, no queue
#                   (the spool's own lock, counters and segment files)
#   JL_LANE         each thread copies its framed record into a mapped ring of its
#                   own (no lock, nothing shared): per-thread journal lanes at most
#   JL_LANE_SEQ     the same, with one atomic add per call to a word all threads
#                   share (a sequence number taken from one counter)
#   JL_PAUSE        the pipeline's thread writes only when a flush asks (between
#                   rounds): it never runs during one
#   JL_PAUSE+JL_SKIPREAD         … and acknowledges the journal unread
#   JL_PAUSE+JL_SKIPREAD+JL_NOSPARE  … and a retired segment is deleted, not zeroed
#                   as the spare: callers write fresh pages no other core touched
# (a mode with + sets each of its switches)
# Every switch breaks a guarantee (order, crash safety, delivery: most deliver nothing):
# they exist in this patch only, never in the product. The patch is written
# against one commit and built there: the product has moved on since (part 20 removed
# the fill count that JL_NOFILLS switches off), so its figures say what those parts cost
# then. When it does not apply, this script says so and stops (the figures of BENCHMARKS.md
# part 13 came from b7bf884's version of it, part 14's from ef5057b's, parts 15–16's from
# earlier versions of this one, rebased on part 17 at b6c5678).
#
# Usage: Benchmarks/experiments/two-threads.sh [runs] [case]
set -euo pipefail
runs=${1:-8}
callcase=${2:-hot_path}
here=$(cd "$(dirname "$0")" && pwd)
experiment_base=${JUSTLOG_EXPERIMENT_BASE:-b6c56780b30bd71c481dfdbb71a1aaba513a2dba}
source "$here/build-with-patches.sh" "$here/submission-switches.patch"
modes=(none JL_NOSUBMIT JL_LOCKONLY JL_NOSPOOLLOCK JL_NOCOMMIT JL_NOFILLS JL_NOSHARED JL_IDLEWORKER JL_PREFETCH JL_OWNSPOOL JL_LANE JL_LANE_SEQ
    JL_PAUSE JL_PAUSE+JL_SKIPREAD JL_PAUSE+JL_SKIPREAD+JL_NOSPARE)
results=$(mktemp)
for ((run = 1; run <= runs; run++)); do
    for mode in "${modes[@]}"; do
        if [[ $mode == none ]]; then
            line=$("$bin" bench --only concurrency --case "$callcase")
        else
            # shellcheck disable=SC2046
            line=$(env $(tr '+' '\n' <<<"$mode" | sed 's/$/=1/') "$bin" bench --only concurrency --case "$callcase")
        fi
        # "concurrency, 2 threads ÷ 1: documented call 1.42× (median round 1.52×; …), literal alone 1.86× (median round 1.90×; …)"
        # (or "message_only 0.84× …"): the ratio over all rounds, then the median round's, of each side.
        read -r documented documented_round literal literal_round < <(sed -E \
            's/.*: [a-z_ ]+ ([0-9.]+)× \(median round ([0-9.]+)×.*literal alone ([0-9.]+)× \(median round ([0-9.]+)×.*/\1 \2 \3 \4/' <<<"$line")
        echo "$mode $documented $documented_round $literal $literal_round" | tee -a "$results" >&2
    done
done
# A thread's first calls may pay for what it sets up once (a spool of its own, a ring's first page faults): the
# ratio over all rounds carries that, the median round does not.
echo
printf '%-34s %-22s %-22s %s\n' "switch" "$callcase: all rounds" "median round" "literal alone: median round"
printf '%-34s %-22s %-22s %s\n' "" "min median max" "min median max" "min median max"
for mode in "${modes[@]}"; do
    awk -v mode="$mode" '
        $1 == mode { a[++n] = $2; r[n] = $3; l[n] = $5 }
        function sorted(x, n,   i, j, t) { for (i = 2; i <= n; i++) for (j = i; j > 1 && x[j-1] > x[j]; j--) { t = x[j]; x[j] = x[j-1]; x[j-1] = t } }
        function median(x, n) { return n % 2 ? x[(n+1)/2] : (x[n/2] + x[n/2+1]) / 2 }
        END {
            sorted(a, n); sorted(r, n); sorted(l, n)
            printf "%-34s %.2f %.2f %.2f         %.2f %.2f %.2f         %.2f %.2f %.2f\n", mode, a[1], median(a, n), a[n], r[1], median(r, n), r[n], l[1], median(l, n), l[n]
        }
    ' "$results"
done
rm -f "$results"
rm -rf "${TMPDIR:-/tmp}"/justlog-own-spool-*
