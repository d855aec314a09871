#!/usr/bin/env bash
# The GPU-machine workflow of docs/gpu.md, in two places:
#
#   bash bench/gpu_run.sh carry      on the development machine, after tools/setup-debian.sh: makes .carry/
#                                    (git-ignored), the headers and shared libraries a GPU machine without internet
#                                    lacks (Criterion, cfitsio, libpng, wcslib, the OpenCL headers and loader) with their
#                                    dependencies. Copy it to the machine with the working tree.
#   bash bench/gpu_run.sh [STEPS]    on the GPU machine, from a copy of the working tree with .carry/: STEPS is a
#                                    comma list of build, test (= test-nvidia,test-pocl), test-nvidia, test-pocl,
#                                    sanitize, bench, peers, profile; default build,test,sanitize,bench,peers.
#
# Results and logs go to $OUT (bench/gpu_env.sh): summary.txt, results/<date>-<device>.{json,csv,svg}, bench.txt,
# peers.json and logs.tar.gz. Every step has a time limit, so one hang cannot eat the whole lease:
# TEST_TIMEOUT (per suite) and CTEST_TOTAL, SANITIZE_TIMEOUT, BENCH_TIMEOUT, PEERS_TIMEOUT, PROFILE_TIMEOUT (seconds).
# Extra options: CTEST_ARGS (e.g. "-R convolve"), BENCH_ARGS (default "--full --backends cuda,opencl --platform NVIDIA"),
# PEERS_ARGS (run_peers.py's), SANITIZE_TOOLS, SANITIZE_SIZES (default tiny), PROFILE ("algorithm[/variant]=kernel-regex ...").
set -uo pipefail
cd "$(dirname "$0")/.."
STEPS=${1:-build,test,sanitize,bench,peers}

if [ "$STEPS" = carry ]; then
    set -e
    rm -rf .carry && mkdir -p .carry/lib .carry/include
    cp -rL /usr/include/criterion /usr/include/CL /usr/include/libpng16 /usr/include/wcslib .carry/include/
    cp /usr/include/fitsio.h /usr/include/fitsio2.h /usr/include/longnam.h /usr/include/png.h /usr/include/pngconf.h \
        /usr/include/pnglibconf.h .carry/include/
    L=/usr/lib/x86_64-linux-gnu
    for lib in $L/libcriterion.so.3 $L/libcfitsio.so.10 $L/libpng16.so.16 $L/libOpenCL.so.1 $L/libwcs.so.7; do
        cp -L "$lib" .carry/lib/
        ldd "$lib" | awk '/=>/{print $3}' | { grep -vE 'libc\.so|libm\.so|ld-linux|libpthread|libdl\.so|librt\.so|libresolv' || true; } |
            xargs -I{} cp -Ln {} .carry/lib/
    done
    du -sh .carry
    exit 0
fi

source bench/gpu_env.sh
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv >"$LOGS/nvidia-smi.txt" 2>&1
log "device: $(head -2 "$LOGS/nvidia-smi.txt" | tail -1)"
G=./build-gpu/tools/gpuws

if has build; then
    log "build"
    cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGPUWS_WERROR=ON -DGPUWS_CUDA_ARCHITECTURES=${CUDA_ARCH:-90} \
        -DCMAKE_PREFIX_PATH="$CARRY" >"$LOGS/build.log" 2>&1 &&
        timeout ${BUILD_TIMEOUT:-400} cmake --build build-gpu -j"$(nproc)" >>"$LOGS/build.log" 2>&1 ||
        { log "BUILD FAILED"; tail -40 "$LOGS/build.log"; exit 1; }
    ours $G info >"$LOGS/info.txt" 2>&1
    cat "$LOGS/info.txt"
fi

# Criterion forks one worker per core by default; with ctest -j on top, a hundred processes would each open a CUDA
# context and an NVIDIA OpenCL context at once. Two workers per suite keep it near the core count.
export CRITERION_JOBS=${CRITERION_JOBS:-2}
run_ctest() { # name, then the environment
    local name=$1
    shift
    ours env "$@" timeout ${CTEST_TOTAL:-500} ctest --test-dir build-gpu --output-on-failure -j${CTEST_JOBS:-4} \
        --timeout ${TEST_TIMEOUT:-300} ${CTEST_ARGS:-} >"$LOGS/test-$name.log" 2>&1
    log "  -> rc=$? $(grep -E 'tests passed|tests failed' "$LOGS/test-$name.log")"
    grep -E "\*\*\*Failed|Failed  |Not Run|Timeout" "$LOGS/test-$name.log" >>"$OUT/summary.txt"
}
if has test || has test-nvidia; then
    log "tests: CPU + NVIDIA OpenCL + CUDA required"
    run_ctest nvidia GPUWS_REQUIRE=cpu,opencl,cuda GPUWS_OPENCL_PLATFORM=NVIDIA
fi
if has test || has test-pocl; then
    log "tests: PoCL required"
    run_ctest pocl GPUWS_REQUIRE=opencl GPUWS_TEST_BACKENDS=opencl GPUWS_OPENCL_PLATFORM=Portable
fi

if has sanitize; then
    # compute-sanitizer cannot follow Criterion's workers (it rejects their process ids), so it runs `gpuws
    # selftest`: every bench workload once, checked against the reference, in one process.
    # tiny runs every workload in seconds, even under racecheck (small: SANITIZE_SIZES=small).
    for tool in ${SANITIZE_TOOLS:-memcheck racecheck synccheck initcheck}; do
        ours timeout ${SANITIZE_TIMEOUT:-150} compute-sanitizer --tool "$tool" --error-exitcode 99 \
            $G selftest --backends cuda --sizes ${SANITIZE_SIZES:-tiny} >"$LOGS/sanitize-$tool.log" 2>&1
        log "compute-sanitizer $tool: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|selftest:' "$LOGS/sanitize-$tool.log" | tr '\n' ' ')"
    done
fi

if has bench; then
    name="$(date -u +%F)-$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 |
        tr 'A-Z' 'a-z' | sed 's/[^a-z0-9]\{1,\}/-/g; s/^-//; s/-$//')"
    mkdir -p "$OUT/results"
    compare=()
    [ -s "$OUT/peers.json" ] && compare=(--compare "$OUT/peers.json")
    bench_args=${BENCH_ARGS---full --backends cuda,opencl --platform NVIDIA}
    log "bench -> results/$name.{json,csv,svg} $bench_args"
    ours timeout ${BENCH_TIMEOUT:-300} $G bench \
        --json "$OUT/results/$name.json" --csv "$OUT/results/$name.csv" --svg "$OUT/results/$name.svg" \
        ${compare[@]+"${compare[@]}"} $bench_args >"$OUT/bench.txt" 2>"$LOGS/bench.err"
    log "  -> rc=$? $(grep -c FAILED "$OUT/bench.txt") FAILED line(s)"
    cat "$OUT/bench.txt"
fi

# After the bench (the bench matters more if the lease runs out); compare offline with `gpuws bench --compare` or
# bench/peers/compare.py.
if has peers; then
    log "peers (CuPy on the GPU, NumPy/SciPy on the CPU)"
    PYTHONUNBUFFERED=1 timeout ${PEERS_TIMEOUT:-180} python3 bench/peers/run_peers.py --out "$OUT/peers.json" \
        ${PEERS_ARGS:-} >"$LOGS/peers.log" 2>&1
    log "  -> rc=$? $(tail -1 "$LOGS/peers.log")"
fi

# Nsight Compute on one launch (after a warm-up) of each kernel in PROFILE, and the registers and spills of every
# CUDA kernel.
if has profile; then
    find build-gpu -name '*.so' | while read -r so; do cuobjdump --dump-resource-usage "$so" 2>/dev/null; done \
        >"$LOGS/resource-usage.txt"
    for spec in ${PROFILE:-convolve2d/f32=convolve2d monte_carlo_pi=monte_carlo_pi_partial}; do
        alg=${spec%%=*} k=${spec#*=}
        ours timeout ${PROFILE_TIMEOUT:-90} ncu --kernel-name "regex:$k" --launch-skip 1 --launch-count 1 \
            --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
            --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section SchedulerStats \
            $G bench --backends cuda --no-ceilings --algorithms "$alg" --budget 0.2 --repeat 2 \
            >"$LOGS/ncu-${alg//\//-}.txt" 2>&1
        log "ncu $alg ($k): rc=$? $(grep -E 'Duration|Compute \(SM\) Throughput|Registers Per|Achieved Occupancy' "$LOGS/ncu-${alg//\//-}.txt" | tr -s ' ' | tr '\n' ';')"
    done
fi
log "done"
