# Sourced from the repository root by bench/gpu_run.sh (and by one's own scripts for a GPU machine, docs/gpu.md):
# where the logs go, the carried libraries, and NVIDIA's OpenCL registered next to PoCL's.
#   $OUT    what comes back from the machine (default /tmp/gpuws-out); $OUT/summary.txt is the run's summary
#   $LOGS   the full logs, archived into $OUT/logs.tar.gz after every step (a run cut short keeps what $OUT holds)
#   log MSG a timestamped line in the summary; pack re-archives the logs; has STEP: STEP is in $STEPS
#   ours CMD runs CMD with the carried libraries of $CARRY (.carry/) on LD_LIBRARY_PATH, and only CMD
OUT=${OUT:-/tmp/gpuws-out}
mkdir -p "$OUT"
LOGS=${LOGS:-/tmp/gpuws-logs}
mkdir -p "$LOGS"
pack() { tar czf "$OUT/logs.tar.gz.tmp" -C "$LOGS" . && mv "$OUT/logs.tar.gz.tmp" "$OUT/logs.tar.gz"; }
log() { echo "== $(date +%T) $*" | tee -a "$OUT/summary.txt"; pack 2>/dev/null; }
has() { [[ ",${STEPS:-}," == *",$1,"* ]]; }
CARRY=$PWD/.carry
# Symbolic links may not survive the copy to the machine: remake the linker names.
if [ -d "$CARRY/lib" ]; then
    (cd "$CARRY/lib" && ln -sf libcriterion.so.3 libcriterion.so && ln -sf libcfitsio.so.10 libcfitsio.so &&
        ln -sf libpng16.so.16 libpng16.so && ln -sf libpng16.so.16 libpng.so &&
        { [ ! -e libwcs.so.7 ] || ln -sf libwcs.so.7 libwcs.so; })
fi
ours() { LD_LIBRARY_PATH="$CARRY/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@"; }
[ -d /usr/local/cuda/bin ] && export PATH=/usr/local/cuda/bin:$PATH
# NVIDIA's OpenCL ICD is installed but not registered: register it next to the registered ones (PoCL).
mkdir -p /tmp/icd
echo libnvidia-opencl.so.1 >/tmp/icd/nvidia.icd
cp /etc/OpenCL/vendors/*.icd /tmp/icd/ 2>/dev/null
export OCL_ICD_VENDORS=/tmp/icd
export GPUWS_CACHE_DIR=${GPUWS_CACHE_DIR:-/tmp/gpuws-cache}
