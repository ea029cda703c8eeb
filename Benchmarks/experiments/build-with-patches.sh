# Sourced by the experiment scripts: builds this commit with the given patches applied, in a git worktree (release,
# scratch path .build-experiments/ at the repository's root), and sets `bin` to the built `justlog` and
# LD_LIBRARY_PATH to its libraries. Stops, saying so, when a patch no longer applies. Removes the worktree on exit,
# then runs the caller's `cleanup_more` if it defined one.
#
# Usage (after `set -euo pipefail`): source "$(dirname "$0")/build-with-patches.sh" <patch>...
root=$(git rev-parse --show-toplevel)
tree=$(mktemp -d /tmp/justlog-experiment.XXXXXX)
cleanup() {
    git -C "$root" worktree remove --force "$tree" >/dev/null 2>&1 || rm -rf "$tree"
    if declare -F cleanup_more >/dev/null; then cleanup_more; fi
}
trap cleanup EXIT
git -C "$root" worktree add --detach "$tree" HEAD >/dev/null
for patch in "$@"; do
    if ! git -C "$tree" apply "$patch"; then
        echo "$(basename "$0"): $patch no longer applies to this commit; write it again" >&2
        exit 1
    fi
done
scratch="$root/.build-experiments"
(cd "$tree" && swift build -c release --product justlog --scratch-path "$scratch" 2>&1 | tail -1) >&2
bin="$scratch/release/justlog"
export LD_LIBRARY_PATH="$scratch/release${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
