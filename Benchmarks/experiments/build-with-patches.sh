# Sourced by the experiment scripts: builds a commit — `experiment_base` if the caller set it (the commit its patch
# was written against), else this one — with the given patches applied, in a git worktree (release, scratch path
# .build-experiments/ at the repository's root), and sets `bin` to the built `justlog` and LD_LIBRARY_PATH to its
# libraries. Stops, saying so, when a patch does not apply. Removes the worktree on exit, then runs the caller's
# `cleanup_more` if it defined one.
#
# Usage (after `set -euo pipefail`): [experiment_base=<commit>] source "$(dirname "$0")/build-with-patches.sh" <patch>...
root=$(git rev-parse --show-toplevel)
base=${experiment_base:-HEAD}
tree=$(mktemp -d /tmp/justlog-experiment.XXXXXX)
cleanup() {
    git -C "$root" worktree remove --force "$tree" >/dev/null 2>&1 || rm -rf "$tree"
    if declare -F cleanup_more >/dev/null; then cleanup_more; fi
}
trap cleanup EXIT
git -C "$root" worktree add --detach "$tree" "$base" >/dev/null
echo "$(basename "$0"): building $(git -C "$root" log -1 --format='%h %s' "$base") with $*" >&2
for patch in "$@"; do
    if ! git -C "$tree" apply "$patch"; then
        echo "$(basename "$0"): $patch does not apply to $(git -C "$root" rev-parse --short "$base"); rebase it (and move" \
            "the script's pinned base, if it has one; JUSTLOG_EXPERIMENT_BASE=<commit> builds another)" >&2
        exit 1
    fi
done
scratch="$root/.build-experiments"
(cd "$tree" && swift build -c release --product justlog --scratch-path "$scratch" 2>&1 | tail -1) >&2
bin="$scratch/release/justlog"
export LD_LIBRARY_PATH="$scratch/release${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
