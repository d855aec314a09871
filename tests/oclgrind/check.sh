#!/bin/sh
# Runs a command on the Oclgrind simulator with its checks on, and fails when the command fails or Oclgrind reports
# anything. Usage:
#   check.sh ICD_DIR CACHE_DIR RACE_KERNELS COMMAND [ARGS...]
# ICD_DIR holds only Oclgrind's ICD file, so the command sees no other OpenCL platform. CACHE_DIR is emptied first:
# a program cached from a build with other options would be reused. RACE_KERNELS names (comma-separated, or -)
# the kernels whose data-race reports are expected: they share memory between work-items or work-groups by design,
# and docs/reliability.md ("Oclgrind") says why each is correct. Their race reports are counted; any other report,
# a race in any other kernel included, and anything else on stderr, fails.
# -cl-opt-disable: Oclgrind 21.10 mishandles three shapes of optimised code (tests/oclgrind/*.sim show each).
# The kernels that ran (Oclgrind's instruction counts) are listed at the end.
set -u
[ $# -ge 4 ] || { echo "usage: $0 ICD_DIR CACHE_DIR RACE_KERNELS COMMAND [ARGS...]" >&2; exit 2; }
icd=$1 cache=$2 races=$3
shift 3
rm -rf "$cache" && mkdir -p "$cache" || exit 1
out="$cache/stdout" err="$cache/stderr"
OCL_ICD_VENDORS="$icd" OPENCL_VENDOR_PATH="$icd" GPUWS_BACKEND=opencl GPUWS_OPENCL_PLATFORM=Oclgrind \
    GPUWS_CACHE_DIR="$cache" OCLGRIND_DATA_RACES=1 OCLGRIND_UNINITIALIZED=1 OCLGRIND_CHECK_API=1 \
    OCLGRIND_BUILD_OPTIONS=-cl-opt-disable OCLGRIND_MAX_ERRORS=1000000 OCLGRIND_INST_COUNTS=1 \
    "$@" >"$out" 2>"$err"
rc=$?
# The command's own output, without the instruction counts (a heading line, then indented counts).
grep -v -e "^Instructions executed for kernel" -e "^[[:space:]]" -e "^$" "$out"
[ "$rc" -eq 0 ] || echo "FAILED: the command exited with status $rc"
# Oclgrind's reports: a heading line, indented details, a blank line.
awk -v races=",$races," '
function flush() {
    if (head != "") {
        if (head ~ /data race/ && kernel != "" && index(races, "," kernel ",")) expected++;
        else { unexpected++; if (unexpected <= 20) print block "\n" }
    }
    head = ""; kernel = ""; block = ""
}
/^$/ { flush(); next }
/^[[:space:]]/ { block = block "\n" $0; if ($1 == "Kernel:") kernel = $2; next }
{ flush(); head = $0; block = $0 }
END {
    flush()
    if (expected) printf "%d data-race reports in kernels that race by design (%s)\n", expected, races
    if (unexpected) { printf "FAILED: %d reports or other lines on stderr (the first 20 above)\n", unexpected; exit 1 }
}' "$err" || rc=1
kernels=$(sed -n "s/^Instructions executed for kernel '\(.*\)':.*/\1/p" "$out" "$err" | sort -u | tr '\n' ' ')
echo "kernels run on Oclgrind: ${kernels:-none}"
exit "$rc"
