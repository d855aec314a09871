#!/usr/bin/env bash
# Exploration on the GPU machine, for the open performance goals (one device call; logs in $OUT/logs.tar.gz):
#   zs       zero_suppress_i16 kernel variants (bench/experiments/zs_variants.cu) against the copy ceiling
#   mcpi     monte_carlo_pi kernel variants (bench/experiments/mcpi_variants.cu) and ncu pipe use of two of them
#   bench    the rows still short of a goal, CUDA and NVIDIA OpenCL side by side
#   oclprof  per-kernel device times on NVIDIA OpenCL (GPUWS_TUNING=opencl_profile=1) and on CUDA (ncu) for the
#            multi-kernel rows, to split each OpenCL/CUDA gap into kernel time and launch gaps
#   verify   the suites in VERIFY_TESTS on CUDA + NVIDIA OpenCL, then on PoCL, and compute-sanitizer (memcheck,
#            racecheck, synccheck) over `gpuws selftest` of the algorithms in VERIFY_ALGS
#   ab       `gpuws bench` of AB_ALGS once per setting in AB_SETTINGS (space-separated VAR=value, "-" = none), at
#            each size of AB_SIZES (default: default)
#   variants `gpuws bench` of AB_ALGS (VARIANT_BACKENDS, default cuda) with the main build and with other builds of the CLI, twice in turn:
#            VARIANT_FLAGS "name=FLAG,FLAG ..." (this tree, extra nvcc and C compiler flags), VARIANT_TREES "name=DIR ..." (another
#            source tree, e.g. an older commit exported under .carry/), each under every VARIANT_SETTINGS env setting,
#            at VARIANT_SIZE (default: default)
#   gap      launch cost of back-to-back kernels: bench/experiments/cl_launch_gap.c on NVIDIA's OpenCL (queue
#            settings) against bench/experiments/cuda_launch_gap.cu
#   persist  bench/experiments/conv2d_persistent.cu: kernel times of the f32 workshop convolve2d, the library's fixed
#            and persistent kernels (any boundary and _fill), outputs compared
#   ncu2d    ncu on the f32 workshop convolve2d kernel: the full set, and stall samples per SASS instruction
#   steps    bench/experiments/sources_steps.c: the pipeline's per-step event times and host wall time per call, CUDA
#            and NVIDIA OpenCL, 2048^2 and 4096^2, under each STEPS_SETTINGS env setting ("-" = none)
#   hostpath bench/experiments/conv2d_hostpath.c: a convolve2d row's parts (host time per call, event-timed call,
#            back-to-back calls, timer floor), CUDA and NVIDIA OpenCL
#   clinfo   the OpenCL platforms' versions and extensions (bench/experiments/cl_info.c)
#   roundtrip bench/experiments/cl_roundtrip.c on NVIDIA's OpenCL: ways for the host to get 4 bytes a kernel wrote
#   ncuk     ncu (speed of light, occupancy, launch, scheduler and warp-state sections) on one launch of each kernel
#            regex in NCU_KERNELS (space-separated) during `gpuws bench` of NCU_ALGS on CUDA
#   stress   STRESS_TEST (a test binary) with --filter STRESS_FILTER on PoCL, STRESS_RUNS times under each
#            STRESS_SETTINGS env setting ("-" = none), bench/experiments/crash_trace.c preloaded: a crash's signal,
#            address and backtrace (frames resolved with addr2line where it is installed)
#   ptx      NVIDIA's OpenCL PTX of PTX_FILE (default kernels/convolve2d/convolve2d.cl) built with PTX_OPTS through
#            bench/experiments/cl_build_probe.c: per kernel matching PTX_KERNELS, its count of each load/store kind
#   usage: bash bench/gpu_explore.sh [steps]   (default: build,mcpi,bench,oclprof)
#   EXPLORE_ALGS: the bench step's --algorithms list; EXPLORE_SIZE: the bench and oclprof steps' --size;
#   OCLPROF_ALGS, OCLPROF_KERNELS (ncu's kernel-name regex), OCLPROF_LAUNCHES: the oclprof step's workloads.
set -uo pipefail
cd "$(dirname "$0")/.."
STEPS=${1:-build,mcpi,bench,oclprof}
source bench/gpu_env.sh
if has build; then bash bench/gpu_session.sh build || exit 1; fi
G=./build-gpu/tools/gpuws

if has clinfo; then
    gcc -O1 -I"$CARRY/include" bench/experiments/cl_info.c -o /tmp/cl_info -l:libOpenCL.so.1 >"$LOGS/clinfo-build.log" 2>&1 &&
        timeout 60 /tmp/cl_info >"$LOGS/clinfo.txt" 2>&1
    log "clinfo: rc=$?"
    cat "$LOGS/clinfo.txt" | tee -a "$OUT/summary.txt"
fi

if has hostpath; then
    gcc -std=c11 -O2 -Iinclude bench/experiments/conv2d_hostpath.c -o /tmp/hostpath -Lbuild-gpu -lgpuws -lm \
        -Wl,-rpath,$PWD/build-gpu >"$LOGS/hostpath-build.log" 2>&1
    ours env GPUWS_OPENCL_PLATFORM=NVIDIA timeout 200 /tmp/hostpath cuda opencl >"$LOGS/hostpath.txt" 2>&1
    log "hostpath: rc=$?"
    cat "$LOGS/hostpath.txt" | tee -a "$OUT/summary.txt"
fi

if has steps; then
    gcc -std=c11 -O2 -Iinclude bench/experiments/sources_steps.c -o /tmp/steps -Lbuild-gpu -lgpuws -lm \
        -Wl,-rpath,$PWD/build-gpu >"$LOGS/steps-build.log" 2>&1
    for set in ${STEPS_SETTINGS:--}; do
        e=(); [ "$set" != - ] && e=("$set")
        for side in 2048 4096; do
            ours env ${e[@]+"${e[@]}"} GPUWS_OPENCL_PLATFORM=NVIDIA timeout 120 /tmp/steps 30 $side cuda opencl \
                >"$LOGS/steps-$side-$set.txt" 2>&1
            log "steps $side $set: rc=$?"
            sed "s/^/  [$set] /" "$LOGS/steps-$side-$set.txt" | cut -c1-250 | tee -a "$OUT/summary.txt"
        done
    done
fi

if has zs; then
    nvcc -arch=sm_90 -O3 -std=c++17 bench/experiments/zs_variants.cu -o /tmp/zs >"$LOGS/zs-build.log" 2>&1 &&
        timeout 60 /tmp/zs >"$LOGS/zs.txt" 2>&1
    log "zs variants: rc=$?"
    cat "$LOGS/zs.txt" | tee -a "$OUT/summary.txt"
fi

if has mcpi; then
    nvcc -arch=sm_90 -O3 -std=c++17 -I kernels bench/experiments/mcpi_variants.cu -o /tmp/mcpi >"$LOGS/mcpi-build.log" 2>&1 &&
        timeout 60 /tmp/mcpi >"$LOGS/mcpi.txt" 2>&1
    log "mcpi variants: rc=$?"
    cat "$LOGS/mcpi.txt" | tee -a "$OUT/summary.txt"
    timeout 120 ncu --kernel-name "regex:v0|vi" --launch-skip 0 --launch-count 40 \
        --section SpeedOfLight --section Occupancy --section ComputeWorkloadAnalysis --section InstructionStats \
        --section WarpStateStats --metrics sm__pipe_fmaheavy_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fmaheavy.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second \
        /tmp/mcpi 3000000 >"$LOGS/ncu-mcpi.txt" 2>&1
    log "ncu mcpi: rc=$?"
fi

if has verify; then
    export CRITERION_JOBS=${CRITERION_JOBS:-4}
    for t in ${VERIFY_TESTS:-}; do
        ours env GPUWS_TEST_DATA=$PWD/tests/data GPUWS_REQUIRE=opencl,cuda GPUWS_TEST_BACKENDS=cuda,opencl GPUWS_OPENCL_PLATFORM=NVIDIA timeout 200 \
            ./build-gpu/tests/$t >"$LOGS/verify-$t-nvidia.log" 2>&1
        log "$t cuda+nvidia-opencl: rc=$? $(grep Synthesis "$LOGS/verify-$t-nvidia.log")"
        ours env GPUWS_TEST_DATA=$PWD/tests/data GPUWS_REQUIRE=opencl GPUWS_TEST_BACKENDS=opencl GPUWS_OPENCL_PLATFORM=Portable timeout 200 \
            ./build-gpu/tests/$t >"$LOGS/verify-$t-pocl.log" 2>&1
        log "$t pocl5: rc=$? $(grep Synthesis "$LOGS/verify-$t-pocl.log")"
    done
    if [ -n "${VERIFY_ALGS:-}" ]; then
        for tool in memcheck racecheck synccheck; do
            ours timeout 120 compute-sanitizer --tool $tool --error-exitcode 99 $G selftest --backends cuda \
                --algorithms "$VERIFY_ALGS" --sizes small,default >"$LOGS/sanitize-$tool.log" 2>&1
            log "compute-sanitizer $tool: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|selftest:' "$LOGS/sanitize-$tool.log" | tr '\n' ' ')"
        done
    fi
fi

if has ab; then
    for size in ${AB_SIZES:-default}; do
    for set in ${AB_SETTINGS:--}; do
        e=(); [ "$set" != - ] && e=("$set")
        ours env ${e[@]+"${e[@]}"} timeout 200 $G bench --backends cuda,opencl --platform NVIDIA --no-ceilings \
            --algorithms "$AB_ALGS" --size "$size" --budget 1 --repeat 30 >"$LOGS/ab-$size-$set.txt" 2>&1
        log "ab $size $set: rc=$?"
        grep -A40 "^workload" "$LOGS/ab-$size-$set.txt" | grep -E "cuda|opencl" | sed "s/^/  [$set] /" | cut -c1-150 | tee -a "$OUT/summary.txt"
    done
    done
fi

if has variants; then
    builds=("main=build-gpu")
    build_cli() { # name source-dir [cmake args]: the gpuws CLI of another build, added to builds when it links
        local n=$1 src=$2; shift 2
        cmake -S "$src" -B "build-$n" -DCMAKE_BUILD_TYPE=Release -DGPUWS_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH="$CARRY" \
            "$@" >"$LOGS/build-$n.log" 2>&1 && timeout 300 cmake --build "build-$n" -j16 --target gpuws_cli \
            >>"$LOGS/build-$n.log" 2>&1 && builds+=("$n=build-$n")
        log "variant $n ($src $*): rc=$?"
    }
    for v in ${VARIANT_FLAGS:-}; do # name=FLAG,FLAG: for nvcc and the C compiler
        f=${v#*=}; f=${f//,/ }; build_cli "${v%%=*}" . -DCMAKE_CUDA_FLAGS="$f" -DCMAKE_C_FLAGS="$f"
    done
    for v in ${VARIANT_TREES:-}; do build_cli "${v%%=*}" "${v#*=}"; done
    for round in 1 2; do
        for b in "${builds[@]}"; do
            n=${b%%=*}; d=${b#*=}
            for set in ${VARIANT_SETTINGS:--}; do # each build also under each setting (VAR=value; "-" = none)
                e=(); [ "$set" != - ] && e=("$set")
                ours env ${e[@]+"${e[@]}"} timeout 120 ./$d/tools/gpuws bench --backends "${VARIANT_BACKENDS:-cuda}" \
                    --platform NVIDIA --no-ceilings --algorithms "$AB_ALGS" --size "${VARIANT_SIZE:-default}" --budget 1 \
                    --repeat 30 >"$LOGS/variant-$n-$set-$round.txt" 2>&1
                log "variant $n $set round $round: rc=$?"
                grep -A40 "^workload" "$LOGS/variant-$n-$set-$round.txt" | grep -E "cuda|opencl" |
                    sed "s/^/  [$n $set .$round] /" | cut -c1-210 | tee -a "$OUT/summary.txt"
            done
        done
    done
fi

if has gap; then
    gcc -std=c11 -O2 -I"$CARRY/include" bench/experiments/cl_launch_gap.c -o /tmp/clgap -l:libOpenCL.so.1 >"$LOGS/gap-build.log" 2>&1 &&
        nvcc -arch=sm_90 -O3 bench/experiments/cuda_launch_gap.cu -o /tmp/cugap >>"$LOGS/gap-build.log" 2>&1
    log "launch gap build: rc=$?"
    { timeout 60 /tmp/cugap 200 2000; timeout 60 /tmp/clgap NVIDIA 200 2000; } >"$LOGS/gap.txt" 2>&1
    log "launch gap: rc=$?"
    cat "$LOGS/gap.txt" | tee -a "$OUT/summary.txt"
fi

if has roundtrip; then
    gcc -std=c11 -O2 -I"$CARRY/include" bench/experiments/cl_roundtrip.c -o /tmp/clrt -l:libOpenCL.so.1 \
        >"$LOGS/roundtrip-build.log" 2>&1 && { timeout 120 /tmp/clrt NVIDIA; timeout 120 /tmp/clrt NVIDIA noprof; } \
        >"$LOGS/roundtrip.txt" 2>&1
    log "roundtrip: rc=$?"
    cat "$LOGS/roundtrip.txt" | tee -a "$OUT/summary.txt"
fi

if has ncuk; then
    for k in ${NCU_KERNELS:-sep_fused_f32}; do
        ours timeout 200 ncu --kernel-name "regex:$k" --launch-skip 2 --launch-count 1 --section SpeedOfLight \
            --section Occupancy --section LaunchStats --section SchedulerStats --section WarpStateStats \
            --section MemoryWorkloadAnalysis $G bench --backends cuda --no-ceilings --algorithms "${NCU_ALGS:-convolve2d}" \
            --budget 0.05 --repeat 3 >"$LOGS/ncuk-$k.txt" 2>&1
        log "ncu $k: rc=$?"
        grep -E "^  [a-z].*\(|Duration|DRAM Through|Compute \(SM\) Th|Registers Per|Achieved Occ|Theoretical Occ|Block Limit|Issue Slots Busy|No Eligible|Eligible Warps|Warp Cycles Per Issued|L1/TEX Hit|L2 Hit|Mem Busy|Max Bandwidth" \
            "$LOGS/ncuk-$k.txt" | tee -a "$OUT/summary.txt"
    done
fi

if has stress; then
    gcc -shared -fPIC -O1 bench/experiments/crash_trace.c -o /tmp/crash_trace.so >"$LOGS/stress-build.log" 2>&1
    log "stress: crash_trace build rc=$?, addr2line: $(command -v addr2line || echo none), gdb: $(command -v gdb || echo none)"
    for set in ${STRESS_SETTINGS:--}; do
        e=(); [ "$set" != - ] && e=("$set")
        crashes=0
        for i in $(seq 1 "${STRESS_RUNS:-10}"); do
            f="$LOGS/stress-$set-$i.log"
            ours env ${e[@]+"${e[@]}"} LD_PRELOAD=/tmp/crash_trace.so GPUWS_TEST_DATA=$PWD/tests/data GPUWS_REQUIRE=opencl \
                GPUWS_TEST_BACKENDS=opencl GPUWS_OPENCL_PLATFORM=Portable timeout 120 \
                ./build-gpu/tests/${STRESS_TEST:-test_convolve2d_separable} --filter "${STRESS_FILTER:-*}" >"$f" 2>&1
            if grep -q "crash_trace\|CRASH" "$f"; then
                crashes=$((crashes + 1))
                grep -A40 "crash_trace" "$f" | head -60 >>"$OUT/summary.txt"
                # resolve lib(+0xoffset) frames
                grep -oE "^[^ ]+\(\+0x[0-9a-f]+\)" "$f" | sort -u | while IFS= read -r fr; do
                    lib=${fr%%(*}; off=${fr##*+}; off=${off%)}
                    echo "  $fr -> $(addr2line -f -C -e "$lib" "$off" 2>/dev/null | tr '\n' ' ')"
                done >>"$OUT/summary.txt"
            fi
        done
        log "stress $set: $crashes of ${STRESS_RUNS:-10} runs crashed"
    done
fi

if has ptx; then
    gcc -std=c11 -O1 -I"$CARRY/include" bench/experiments/cl_build_probe.c -o /tmp/probe -l:libOpenCL.so.1 \
        >"$LOGS/ptx-build.log" 2>&1 &&
        PROBE_DUMP="$LOGS/program.ptx" timeout 120 /tmp/probe NVIDIA \
            "-cl-std=CL1.2 -cl-kernel-arg-info -DGPUWS_FP64=1 ${PTX_OPTS:--DGPUWS_CONV2D_SEP=1 -DGPUWS_NV_PTX=1}" \
            kernels/common/prelude.cl "${PTX_FILE:-kernels/convolve2d/convolve2d.cl}" >"$LOGS/ptx-probe.txt" 2>&1
    log "ptx: rc=$?"
    awk -v re="${PTX_KERNELS:-sep_fused}" '/^\.(visible )?\.?entry/ { k = $0; sub(/.*entry /, "", k); sub(/\(.*/, "", k) }
        k ~ re && /(ld|st)\.(shared|global|local)/ { op = $1; if (op ~ /^@/) op = $2; c[k " " op]++ }
        END { for (x in c) print "  " x ": " c[x] }' "$LOGS/program.ptx" | sort | tee -a "$OUT/summary.txt"
fi

if has persist; then
    nvcc -arch=sm_90 -O3 -std=c++17 bench/experiments/conv2d_persistent.cu -o /tmp/persist >"$LOGS/persist-build.log" 2>&1 &&
        timeout 120 /tmp/persist 50 >"$LOGS/persist.txt" 2>&1
    log "conv2d persistent: rc=$?"
    cat "$LOGS/persist.txt" | tee -a "$OUT/summary.txt"
fi

if has ncu2d; then
    ours timeout 200 ncu --set full --import-source no --kernel-name regex:convolve2d_fixed_f32 --launch-skip 2 \
        --launch-count 1 -f -o /tmp/c2d $G bench --backends cuda --no-ceilings --algorithms convolve2d --budget 0.05 \
        --repeat 3 >"$LOGS/ncu2d-run.txt" 2>&1
    log "ncu convolve2d: rc=$?"
    ncu -i /tmp/c2d.ncu-rep --page details >"$LOGS/ncu2d-details.txt" 2>&1
    ncu -i /tmp/c2d.ncu-rep --page source --csv --print-source sass >"$LOGS/ncu2d-sass.csv" 2>&1
    log "ncu convolve2d pages: $(wc -l <"$LOGS/ncu2d-sass.csv") source lines"
    grep -E "Duration|Elapsed Cycles|SM Active Cycles|Registers Per|Achieved Occupancy|Issue Slots Busy|No Eligible|Active Warps Per|Eligible Warps|Executed Ipc A|Waves Per SM|Block Limit" \
        "$LOGS/ncu2d-details.txt" | tee -a "$OUT/summary.txt"
fi

if has bench; then
    ours timeout 240 $G bench --backends cuda,opencl --platform NVIDIA \
        --algorithms "${EXPLORE_ALGS:-ufunc/zero_suppress_i16,ufunc/zero_suppress_f32,monte_carlo_pi,threshold,label,measure,convolve1d,sources}" \
        --size "${EXPLORE_SIZE:-default}" --budget 1 --repeat 20 --json "$LOGS/bench.json" >"$LOGS/bench.txt" 2>&1
    log "bench: rc=$?"
    grep -E "µs|ms" "$LOGS/bench.txt" | tee -a "$OUT/summary.txt"
fi

if has oclprof; then
    PA=${OCLPROF_ALGS:-threshold,label,measure,convolve1d,ufunc/zero_suppress_i16}
    ours env GPUWS_TUNING=opencl_profile=1 timeout 120 $G bench --backends opencl --platform NVIDIA --no-ceilings \
        --algorithms "$PA" --size "${EXPLORE_SIZE:-default}" --repeat 3 --budget 0.05 \
        >"$LOGS/oclprof.txt" 2>&1
    log "opencl profile: rc=$?"
    ours timeout 150 ncu --kernel-name "regex:${OCLPROF_KERNELS:-label|measure|threshold|convolve1d|zero_suppress}" \
        --launch-count "${OCLPROF_LAUNCHES:-60}" --metrics gpu__time_duration.sum $G bench --backends cuda --no-ceilings \
        --algorithms "$PA" --size "${EXPLORE_SIZE:-default}" --repeat 1 --budget 0.01 \
        >"$LOGS/ncu-times.txt" 2>&1
    log "ncu times: rc=$?"
fi
pack
