#!/usr/bin/env bash
# Installs what gpuws needs to build and test on Debian/Ubuntu (run as root or with sudo).
# nvcc is not installed here: with the CUDA toolkit on PATH the CUDA backend is built too.
set -euo pipefail
if [ "$(id -u)" -ne 0 ]; then
    exec sudo "$0" "$@"
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends \
    cmake build-essential pkg-config \
    ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo \
    libcriterion-dev libcfitsio-dev libpng-dev valgrind >/dev/null
echo "gpuws: build dependencies installed"
