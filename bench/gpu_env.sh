# Sourced by the GPU-machine scripts (gpu_session.sh, gpu_explore.sh) from the repository root: where logs go, the
# carried libraries, and NVIDIA's OpenCL registered next to PoCL's.
OUT=${OUT:-/tmp/gpuws-out}
mkdir -p "$OUT"
# At most 8 files come back from the device machine, and a run cut short returns what $OUT holds at that moment:
# logs are written to $LOGS and re-archived into $OUT/logs.tar.gz after every step.
LOGS=/tmp/gpuws-logs
mkdir -p "$LOGS"
pack() { tar czf "$OUT/logs.tar.gz.tmp" -C "$LOGS" . && mv "$OUT/logs.tar.gz.tmp" "$OUT/logs.tar.gz"; }
log() { echo "== $(date +%T) $*" | tee -a "$OUT/summary.txt"; pack 2>/dev/null; }
has() { [[ ",$STEPS," == *",$1,"* ]]; }
CARRY=$PWD/.carry
# symbolic links do not survive the trip to the device machine: remake the linker names
(cd "$CARRY/lib" && ln -sf libcriterion.so.3 libcriterion.so && ln -sf libcfitsio.so.10 libcfitsio.so &&
    ln -sf libpng16.so.16 libpng16.so && ln -sf libpng16.so.16 libpng.so)
ours() { LD_LIBRARY_PATH="$CARRY/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@"; }
# NVIDIA's OpenCL ICD is installed but not registered: register it next to PoCL's.
mkdir -p /tmp/icd
echo libnvidia-opencl.so.1 >/tmp/icd/nvidia.icd
cp /etc/OpenCL/vendors/*.icd /tmp/icd/ 2>/dev/null
export OCL_ICD_VENDORS=/tmp/icd
export GPUWS_CACHE_DIR=/tmp/gpuws-cache
