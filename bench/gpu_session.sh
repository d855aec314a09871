#!/usr/bin/env bash
# One call on the GPU machine (the `device` tool): build, the whole test matrix with CUDA and both OpenCL platforms
# (NVIDIA, PoCL) required, compute-sanitizer on the CUDA cases, and the benchmarks. Logs go to $OUT.
#
# Criterion, cfitsio, libpng and the OpenCL headers are not installed there; they travel in .carry/ (git-ignored,
# made by bench/make_carry.sh) and only our own programs see them (LD_LIBRARY_PATH is set per command).
#   usage: bash bench/gpu_session.sh [steps]   steps: any of build,test(-nvidia,-pocl),sanitize,profile,peers,bench
#   (default: all but profile)
#   BENCH_ARGS: extra `gpuws bench` options (e.g. "--backends cuda,opencl --budget 20"); PEERS_ARGS: run_peers.py's.
# Every step has a time limit (TEST_TIMEOUT, SANITIZE_TIMEOUT, BENCH_TIMEOUT, PEERS_TIMEOUT) so one hang cannot eat
# the whole lease.
set -uo pipefail
cd "$(dirname "$0")/.."
STEPS=${1:-build,test,sanitize,peers,bench}
source bench/gpu_env.sh

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv >"$LOGS/nvidia-smi.txt" 2>&1
log "device: $(head -2 "$LOGS/nvidia-smi.txt" | tail -1)"

if has build; then
    log "build"
    cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGPUWS_WERROR=ON -DGPUWS_CUDA_ARCHITECTURES=90 \
        -DCMAKE_PREFIX_PATH="$CARRY" >"$LOGS/build.log" 2>&1 &&
        timeout 300 cmake --build build-gpu -j16 >>"$LOGS/build.log" 2>&1 || { log "BUILD FAILED"; tail -40 "$LOGS/build.log"; exit 1; }
    ours ./build-gpu/tools/gpuws info >"$LOGS/info.txt" 2>&1
    cat "$LOGS/info.txt"
fi

# Criterion forks one worker per core by default; with ctest -j on top, a hundred processes would each open a CUDA
# context and an NVIDIA OpenCL context at once. Two workers per suite keep it near the core count.
export CRITERION_JOBS=${CRITERION_JOBS:-2}
if has label-stress; then
    ours env GPUWS_REQUIRE=opencl,cuda GPUWS_TEST_BACKENDS=cuda,opencl GPUWS_OPENCL_PLATFORM=NVIDIA GPUWS_TEST_REPEAT=${LABEL_REPEAT:-40} \
        timeout 120 ./build-gpu/tests/test_label --filter 'label/repeated*' --verbose=0 -j4 >"$LOGS/label-stress.log" 2>&1
    log "label stress: rc=$? $(grep -E 'Assertion|runs differ|Synthesis' "$LOGS/label-stress.log" | tr '\n' ' ')"
fi
if has test || has test-nvidia; then
    log "tests: cpu + NVIDIA OpenCL + CUDA required"
    ours env GPUWS_REQUIRE=cpu,opencl,cuda GPUWS_OPENCL_PLATFORM=NVIDIA timeout ${CTEST_TOTAL:-300} \
        ctest --test-dir build-gpu --output-on-failure -j${CTEST_JOBS:-4} --timeout ${TEST_TIMEOUT:-200} ${CTEST_ARGS:-} >"$LOGS/test-nvidia.log" 2>&1
    log "  -> rc=$? $(grep -E 'tests passed|tests failed' "$LOGS/test-nvidia.log")"
    grep -E "Synthesis|\*\*\*Failed|Failed  " "$LOGS/test-nvidia.log" >>"$OUT/summary.txt"
fi
if has test || has test-pocl; then
    log "tests: PoCL OpenCL required"
    ours env GPUWS_REQUIRE=opencl GPUWS_TEST_BACKENDS=opencl GPUWS_OPENCL_PLATFORM=Portable timeout ${CTEST_TOTAL:-300} \
        ctest --test-dir build-gpu --output-on-failure -j${CTEST_JOBS:-4} --timeout ${TEST_TIMEOUT:-200} ${CTEST_ARGS:-} >"$LOGS/test-pocl.log" 2>&1
    log "  -> rc=$? $(grep -E 'tests passed|tests failed' "$LOGS/test-pocl.log")"
    grep -hE "Synthesis" "$LOGS"/test-*.log | sort | uniq -c >>"$OUT/summary.txt"
fi

if has sanitize; then
    # Criterion's workers cannot be followed by compute-sanitizer (it rejects their process ids), so the sanitizer
    # runs `gpuws selftest`: every workload once, checked against the reference, in one process.
    for tool in ${SANITIZE_TOOLS:-memcheck racecheck synccheck}; do
        ours timeout ${SANITIZE_TIMEOUT:-150} compute-sanitizer --tool "$tool" --error-exitcode 99 \
            ./build-gpu/tools/gpuws selftest --backends cuda --sizes small >"$LOGS/sanitize-$tool.log" 2>&1
        rc=$?
        log "compute-sanitizer $tool: rc=$rc $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|selftest:' "$LOGS/sanitize-$tool.log" | tr '\n' ' ')"
    done
fi

if has bench; then
    # The JSON and SVG are the results to commit: bench/results/<date>-<device>.{json,svg}
    name="$(date -u +%F)-$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 |
        tr 'A-Z' 'a-z' | sed 's/[^a-z0-9]\{1,\}/-/g; s/^-//; s/-$//')"
    mkdir -p "$OUT/results"
    compare=()
    [ -s "$OUT/peers.json" ] && compare=(--compare "$OUT/peers.json")
    log "bench -> results/$name.{json,csv,svg} ${BENCH_ARGS:-}"
    ours timeout ${BENCH_TIMEOUT:-240} ./build-gpu/tools/gpuws bench --json "$OUT/results/$name.json" --csv "$OUT/results/$name.csv" \
        --svg "$OUT/results/$name.svg" ${compare[@]+"${compare[@]}"} ${BENCH_ARGS:-} >"$OUT/bench.txt" 2>"$LOGS/bench.err"
    log "  -> rc=$? $(grep -c FAILED "$OUT/bench.txt") FAILED line(s)"
    cat "$OUT/bench.txt"
fi

# Profiles of the kernels furthest from their goals (PROFILE: algorithm/variant=kernel-regex list), one launch each
# after the warm-up, and the registers/spills of every CUDA kernel.
if has profile; then
    find build-gpu -name '*.so' | while read -r so; do cuobjdump --dump-resource-usage "$so" 2>/dev/null; done \
        >"$LOGS/resource-usage.txt"
    for spec in ${PROFILE:-convolve2d/f32=convolve2d_tiled_f32 convolve1d/f64=convolve1d monte_carlo_pi=monte_carlo_pi_partial measure=measure_accumulate}; do
        alg=${spec%%=*} k=${spec#*=}
        ours timeout ${PROFILE_TIMEOUT:-90} ncu --kernel-name "regex:$k" --launch-skip 1 --launch-count 1 \
            --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
            --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section SchedulerStats \
            ./build-gpu/tools/gpuws bench --backends cuda --no-ceilings --algorithms "$alg" --budget 0.2 --repeat 2 \
            >"$LOGS/ncu-${alg//\//-}.txt" 2>&1
        log "ncu $alg ($k): rc=$? $(grep -E 'Duration|Compute \(SM\) Throughput|Registers Per|Achieved Occupancy' "$LOGS/ncu-${alg//\//-}.txt" | tr -s ' ' | tr '\n' ';')"
    done
fi

# Peers after the bench (the bench matters more if the lease runs out); compare offline with
# `gpuws bench --compare` or bench/peers/compare.py.
if has peers && [ -f bench/peers/run_peers.py ]; then
    log "peers (CuPy on the GPU, NumPy/SciPy on the CPU)"
    PYTHONUNBUFFERED=1 timeout ${PEERS_TIMEOUT:-180} python3 bench/peers/run_peers.py --out "$OUT/peers.json" ${PEERS_ARGS:-} >"$LOGS/peers.log" 2>&1
    log "  -> rc=$? $(tail -1 "$LOGS/peers.log")"
fi
log "done"
