#!/usr/bin/env bash
# Instructions per log call on the caller's thread, counted by valgrind's callgrind.
#
# ordo-one/benchmark's `instructions` metric reads perf events; on machines where `perf stat -e instructions true`
# says "not supported" (this project's 2-core Linux machines) it records nothing, so this script counts them:
# for each case it runs `justlog bench --only <case> --calls N` (release build) under
# `valgrind --tool=callgrind --separate-threads=yes` twice, with N = 200 and N = 2200, and divides the difference
# of the main thread's totals by 2000. Set-up, warm-up and exit cost the same in both runs and cancel out; the
# pipeline's and the network's threads are counted in their own files and left out. callgrind counts
# instructions, not time: the figures repeat whatever else the machine is doing.
#
#   Benchmarks/callgrind.sh                  # every case: a table
#   Benchmarks/callgrind.sh hot_path         # some cases
#   Benchmarks/callgrind.sh --check          # fail (exit 2) if a case is > 5 % above Benchmarks/callgrind-thresholds.json
#   Benchmarks/callgrind.sh --update         # write the measured figures to that file
#   Benchmarks/callgrind.sh --profile hot_path   # where the caller's instructions go (inclusive, top functions)
#   Benchmarks/callgrind.sh --worker hot_path    # where the pipeline's thread's go, per event (inclusive)
#
# JUSTLOG_BIN=<path to justlog> skips the build.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=table
cases=()
for argument in "$@"; do
    case "$argument" in
        --check) mode=check ;;
        --update) mode=update ;;
        --profile) mode=profile ;;
        --worker) mode=worker ;;
        -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
        *) cases+=("$argument") ;;
    esac
done
all_cases=(literal filtered file_only file_unjournaled message_only hot_path hot_path_fields error_chain bridge streamloghandler)
if [ ${#cases[@]} -eq 0 ]; then
    if [ "$mode" = profile ] || [ "$mode" = worker ]; then cases=(hot_path); else cases=("${all_cases[@]}"); fi
fi
command -v valgrind >/dev/null || { echo "callgrind.sh: valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }

bin=${JUSTLOG_BIN:-}
if [ -z "$bin" ]; then
    nice -n 5 swift build -c release --product justlog >&2
    bin=$(swift build -c release --show-bin-path)/justlog
fi
thresholds=Benchmarks/callgrind-thresholds.json
work=$(mktemp -d /tmp/justlog-callgrind.XXXXXX)
trap 'rm -rf "$work"' EXIT
# valgrind 3.19 can't read the DWARF of Swift 6.3 binaries ("Possibly corrupted debuginfo file"): run copies
# without debug information (function names stay, in the symbol table). The interposer's library is found
# next to the tool ($ORIGIN), so it is copied too.
bin_dir=$(dirname "$bin")
cp "$bin" "$work/justlog"
for library in "$bin_dir"/lib*.so; do [ -e "$library" ] && cp "$library" "$work/"; done
strip --strip-debug "$work/justlog" "$work"/lib*.so 2>/dev/null || true
bin="$work/justlog"

small=200
large=2200
# Swift seeds its hashing per process; a fixed seed makes the dictionary work (and so the counts) repeat.
export SWIFT_DETERMINISTIC_HASHING=1

# One run: prints the main thread's instruction total and the total of all threads (callgrind writes one file
# per thread; …-01 is the main thread).
run_totals() { # case calls
    local out="$work/$1.$2"
    valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$out.%p" \
        "$bin" bench --only "$1" --calls "$2" >/dev/null 2>"$work/$1.$2.valgrind.log" \
        || { echo "callgrind.sh: $bin bench --only $1 failed:" >&2; tail -n 20 "$work/$1.$2.valgrind.log" >&2; exit 1; }
    local main all
    main=$(awk '/^totals:/ { print $2; exit }' "$(ls "$out".*-01 | head -n 1)")
    all=$(cat "$out".*-[0-9]* | awk '/^totals:/ { sum += $2 } END { print sum }')
    echo "$main $all"
}

# The inclusive instructions of a profile's top functions, divided by `count` (per `unit`), demangled; the first
# `lines` lines.
top_functions() { # file count unit lines
    callgrind_annotate --inclusive=yes --threshold=99 "$1" 2>/dev/null \
        | awk -v count="$2" -v unit="$3" '/^ *[0-9,]+ +\(/ { n = $1; gsub(",", "", n); $1 = ""; printf "%10d /%s  %s\n", n / count, unit, $0; next } { print }' \
        | swift demangle --simplified | sed -n "1,$4p"
}

if [ "$mode" = worker ]; then
    # One run of the most calls the tool makes, after its warm-up burst of 1,024: the pipeline's thread is the
    # busiest thread but the main one, and it writes every one of those events.
    calls=10000
    events=$((calls + 1024))
    for name in "${cases[@]}"; do
        valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$work/worker.$name.%p" \
            "$bin" bench --only "$name" --calls $calls >/dev/null 2>"$work/worker.$name.log"
        file=$(for f in "$work/worker.$name".*-[0-9]*; do
            case "$f" in *-01) continue ;; esac
            echo "$(awk '/^totals:/ { print $2; exit }' "$f") $f"
        done | sort -n | tail -n 1 | cut -d' ' -f2)
        total=$(awk '/^totals:/ { print $2; exit }' "$file")
        echo "== $name: the pipeline's thread, $((total / events)) instructions per event ($events events)"
        echo "   inclusive instructions of its top functions, per event:"
        top_functions "$file" $events event 60
    done
    exit 0
fi

declare -A per_call all_threads
for name in "${cases[@]}"; do
    read -r a_main a_all <<<"$(run_totals "$name" $small)"
    read -r b_main b_all <<<"$(run_totals "$name" $large)"
    per_call[$name]=$(( (b_main - a_main) / (large - small) ))
    all_threads[$name]=$(( (b_all - a_all) / (large - small) ))
done

if [ "$mode" = profile ]; then
    calls=2000
    for name in "${cases[@]}"; do
        # Only what runs inside BenchSuite.measuredCalls is collected: the calls themselves, nothing of the set-up.
        valgrind --tool=callgrind --separate-threads=yes --toggle-collect='*measuredCalls*' \
            --callgrind-out-file="$work/profile.$name.%p" "$bin" bench --only "$name" --calls $calls >/dev/null 2>"$work/profile.$name.log"
        file=$(ls "$work/profile.$name".*-01 | head -n 1)
        echo "== $name: ${per_call[$name]} instructions per call on the caller's thread"
        echo "   inclusive instructions of the top functions during $calls calls (÷ $calls = per call), main thread only:"
        top_functions "$file" $calls call 120
    done
    exit 0
fi

printf '%-18s %14s %26s\n' "case" "instr/call" "all threads, instr/event"
for name in "${cases[@]}"; do printf '%-18s %14s %26s\n' "$name" "${per_call[$name]}" "${all_threads[$name]}"; done

if [ "$mode" = update ]; then
    mkdir -p "$(dirname "$thresholds")"
    {
        echo "{"
        first=1
        for name in "${all_cases[@]}"; do
            [ -n "${per_call[$name]:-}" ] || continue
            [ $first -eq 1 ] || echo ","
            printf '  "%s": %s' "$name" "${per_call[$name]}"
            first=0
        done
        echo ""
        echo "}"
    } > "$thresholds"
    echo "wrote $thresholds"
elif [ "$mode" = check ]; then
    status=0
    for name in "${cases[@]}"; do
        expected=$(sed -n "s/^ *\"$name\": *\([0-9]*\).*/\1/p" "$thresholds")
        [ -n "$expected" ] || { echo "$name: no threshold in $thresholds"; status=2; continue; }
        limit=$(( expected + expected / 20 ))
        if [ "${per_call[$name]}" -gt "$limit" ]; then
            echo "REGRESSION $name: ${per_call[$name]} instructions per call > $expected + 5 % ($limit)"
            status=2
        elif [ "${per_call[$name]}" -lt $(( expected - expected / 20 )) ]; then
            echo "improved $name: ${per_call[$name]} < $expected - 5 %: run with --update to lower the threshold"
        fi
    done
    exit $status
fi
