#!/usr/bin/env bash
# Records the committed thresholds (Benchmarks/Thresholds/*.p90.json) from a run of the benchmarks here, keeping
# only the figures that don't depend on the machine's load: `callerMallocs` (allocations on the calling thread,
# exact) and `instructions` where perf events exist. Left out: times and throughputs (on a shared machine they
# move by more than any tolerance would allow; BENCHMARKS.md has them, with their commands) and
# `mallocCountTotal` (every thread of the process: the benchmark tool's own allocations, and the pipeline's and
# NIO's threads at random moments — 30 or 32 for the same StreamLogHandler call in two runs here).
#
#   Benchmarks/update-thresholds.sh                    # after an intended change; review the diff, commit
#   cd Benchmarks && swift package benchmark thresholds check   # fails (non-zero exit) on a regression
set -euo pipefail
cd "$(dirname "$0")"
swift package --allow-writing-to-package-directory benchmark thresholds update --no-progress "$@"
python3 - <<'PY'
import json, os
for name in sorted(os.listdir("Thresholds")):
    path = os.path.join("Thresholds", name)
    with open(path) as f:
        values = json.load(f)
    keep = {"callerMallocs", "instructions"}
    kept = {k: v for k, v in values.items() if k in keep}
    if kept:
        with open(path, "w") as f:
            json.dump(kept, f, indent=2, sort_keys=True)
            f.write("\n")
        print(f"{name}: {kept}")
    else:
        os.remove(path)
PY
