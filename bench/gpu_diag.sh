#!/usr/bin/env bash
# One-off diagnosis on the GPU machine (2026-11-21): convolve1d/convolve2d failed on NVIDIA's OpenCL (kernel fault,
# CL_UNKNOWN_ERROR -9999) while CUDA passed. Tries the kernels as they are, without unroll pragmas, and the direct
# path, keeps the first variant whose results match the reference, then runs the convolution suites and the
# convolution and matmul-family benchmarks with it. Everything it writes goes to $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpuws-diag}
source bench/gpu_env.sh # carried libraries (ours), NVIDIA's OpenCL registered, the kernel cache
S="$OUT/diag.txt"
L=/tmp/diag-logs
mkdir -p $L
pack() { tar czf "$OUT/logs.tar.gz" -C $L . 2>/dev/null; }
say() { echo "$(date +%T) $*" | tee -a "$S"; pack; }

say "build"
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGPUWS_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH="$CARRY" >$L/build.log 2>&1 &&
    timeout 120 cmake --build build-gpu -j16 >>$L/build.log 2>&1 || { say "BUILD FAILED"; tail -30 $L/build.log >>"$S"; exit 1; }
G=./build-gpu/tools/gpuws
choice=""
for v in default GPUWS_TUNING=convolve_no_unroll=1 GPUWS_TUNING=convolve_path=direct; do
    e=(); [ "$v" != default ] && e=("$v")
    ours env ${e[@]+"${e[@]}"} timeout 45 $G selftest --backends opencl --algorithms convolve1d,convolve2d \
        --sizes small,default >$L/selftest-$v.txt 2>&1
    rc=$?
    say "variant $v: rc=$rc: $(grep -c PASS $L/selftest-$v.txt) pass, $(grep FAIL $L/selftest-$v.txt | head -2 | cut -c1-160 | tr '\n' ' ')"
    if [ $rc -eq 0 ]; then choice=$v; break; fi
done
say "choice: ${choice:-none}"
e=(); [ -n "$choice" ] && [ "$choice" != default ] && e=("$choice")
for t in test_convolve1d test_convolve2d test_cli_convolve; do
    ours env ${e[@]+"${e[@]}"} GPUWS_REQUIRE=opencl,cuda GPUWS_TEST_BACKENDS=opencl,cuda GPUWS_OPENCL_PLATFORM=NVIDIA \
        GPUWS_CLI=$PWD/$G timeout 75 ./build-gpu/tests/$t --verbose=0 -j8 >$L/$t.log 2>&1 &
done
wait
for t in test_convolve1d test_convolve2d test_cli_convolve; do say "$t: $(grep -E 'Synthesis' $L/$t.log || echo 'no synthesis (timeout?)')"; done
ours env ${e[@]+"${e[@]}"} timeout 60 $G bench --backends cuda,opencl --platform NVIDIA \
    --algorithms convolve1d,convolve2d,matmul,transpose,l2_norm --budget 1 --repeat 5 >"$OUT/bench-diag.txt" 2>$L/bench.err
say "bench rc=$? $(grep -c FAILED "$OUT/bench-diag.txt") FAILED"
say "done"
