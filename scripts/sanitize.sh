#!/bin/sh
# The hardening part of the test command (SECURITY.md says what each part proves):
#
#   asan     the tests under AddressSanitizer + UndefinedBehaviorSanitizer:
#            every test but the golden suite's variants, and of those each
#            case once, the store and front end chosen in rotation so that
#            every variant runs (scripts/sanitize-sample.py says why);
#            MEMTOOL_SANITIZE_ALL=1 runs every test. With clang the
#            libFuzzer targets then also run for
#            MEMTOOL_FUZZ_SECONDS (default 8) each on their seed corpora
#            (`make fuzz` runs each for 10 minutes).
#            The Node.js binding's addon is built with the same sanitizers
#            against build-san's libmemtool, and its tests (node_*,
#            golden_node_*) run node with the sanitizer's runtime in
#            LD_PRELOAD (build-san/tests/bindings/node/node.sh), with
#            detect_leaks=0 for node only: V8 leaves its heap to the exit
#   tsan     the threaded tests under ThreadSanitizer
#   analyze  cppcheck and clang-tidy on src/, which must report nothing
#
#   sh scripts/sanitize.sh [asan] [tsan] [analyze]     (no argument: all three)
#
# Build trees: build-san/ and build-tsan/. Uses clang when there is one (the
# fuzz targets need it), else the default compiler (the fuzz corpora are then
# replayed, not fuzzed). MT_STRESS_SCALE scales the stress tests (the ASan and
# TSan runs use half of it: the first pass runs them whole).
set -eu
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
phases=${*:-asan tsan analyze}
fuzz_seconds=${MEMTOOL_FUZZ_SECONDS:-8}
scale=${MT_STRESS_SCALE:-1}
cc_flag=
if command -v clang >/dev/null 2>&1; then
    cc_flag=-DCMAKE_C_COMPILER=clang
fi
status=0

now() { date +%s; }

phase_asan() {
    echo "== sanitize: the tests under ASan + UBSan"
    cmake -S . -B build-san -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo $cc_flag \
        -DMEMTOOL_SANITIZE=address,undefined -DMEMTOOL_FUZZ_SECONDS="$fuzz_seconds" \
        -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
    # A phase runs from "|| status=1", where set -e does not stop it: a build
    # that failed must not leave the tests to run on the binaries of an older one.
    cmake --build build-san -j "$jobs" || return 1
    # (the build above includes the sanitized Node.js addon, target memtool_node_addon)
    sample=.
    if [ "${MEMTOOL_SANITIZE_ALL:-0}" != 1 ]; then
        sample=$(cd build-san && ctest -N | python3 ../scripts/sanitize-sample.py ../tests/golden/cases) ||
            return 1
    fi
    # The regex goes through a file: it names every test, too long for some shells' argv limits.
    echo "$sample" >build-san/sanitize-sample.txt
    # The stress tests at half their size, as under TSan: the first pass runs
    # them whole, and what ASan looks for (a bad access) shows in fewer rounds.
    ascale=$(awk "BEGIN { print $scale / 2 }")
    (cd build-san && MT_STRESS_SCALE=$ascale \
        ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1 \
        UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        ctest --output-on-failure -j "$jobs" -R "$(cat sanitize-sample.txt)")
}

phase_tsan() {
    echo "== sanitize: threaded tests under TSan"
    cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo $cc_flag \
        -DMEMTOOL_SANITIZE=thread >/dev/null
    # Only what the threaded tests need: a TSan build of everything is minutes.
    targets=$(cd build-tsan && ctest -N -L threads | sed -n 's/^ *Test *#[0-9]*: //p')
    extra=$(cd build-tsan && ctest -N -R '^(test_concurrency|test_race)$' | sed -n 's/^ *Test *#[0-9]*: //p')
    # shellcheck disable=SC2086
    cmake --build build-tsan -j "$jobs" --target $targets $extra || return 1
    tscale=$(awk "BEGIN { print $scale / 2 }")
    (cd build-tsan && MT_STRESS_SCALE=$tscale TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
        ctest --output-on-failure -j "$jobs" -R "^($(echo $targets $extra | tr ' ' '|'))\$")
}

phase_analyze() {
    echo "== sanitize: cppcheck and clang-tidy on src/"
    if [ ! -f build-san/compile_commands.json ]; then
        cmake -S . -B build-san -G Ninja $cc_flag -DMEMTOOL_SANITIZE=address,undefined \
            -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
    fi
    sources=$(git ls-files 'src/*.c')
    # warning, portability, performance: the classes that find defects. The
    # style class is left out: its "scope can be reduced" advice is taste, and
    # its knownConditionTrueFalse misreads path.c's component splitter.
    # shellcheck disable=SC2086
    cppcheck --error-exitcode=1 --quiet --inline-suppr -j "$jobs" \
        --enable=warning,portability,performance --std=c11 -D_GNU_SOURCE \
        -Iinclude -Isrc --suppress=missingIncludeSystem $sources
    if command -v clang-tidy >/dev/null 2>&1; then
        # The checks and why some are off: scripts/clang-tidy-checks.
        checks=$(grep -v '^#' scripts/clang-tidy-checks | tr -d ' \n')
        # shellcheck disable=SC2086
        out=$(clang-tidy -p build-san --quiet --checks="$checks" $sources 2>/dev/null | grep -E 'warning:|error:' || true)
        if [ -n "$out" ]; then
            echo "$out"
            echo "clang-tidy: 0 passed, 1 failed"
            return 1
        fi
        echo "clang-tidy: 1 passed, 0 failed"
    else
        echo "clang-tidy not installed; cppcheck only"
    fi
}

for phase in $phases; do
    start=$(now)
    case $phase in
    asan | tsan | analyze) "phase_$phase" || status=1 ;;
    *)
        echo "sanitize.sh: unknown phase '$phase' (asan, tsan, analyze)" >&2
        exit 2
        ;;
    esac
    echo "== sanitize: $phase took $(($(now) - start)) s"
done
exit $status
