#!/usr/bin/env bash
# Installs what gpuws needs to build and test on Debian/Ubuntu. Run it as it is: as root (containers, which have
# no sudo) it installs directly; as a user it re-runs itself through sudo, which asks for the password.
# python3-sep and python3-numpy are for the ctest that compares gpuws_background with SEP (tests/sep/).
# wcslib-dev gives gpuws sources its world coordinates (ra/dec of every object, DS9 regions on the sky).
# nvcc is not installed here: with the CUDA toolkit on PATH the CUDA backend is built too.
set -euo pipefail
if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null 2>&1; then
        echo "setup-debian.sh: installing packages needs root, and sudo is not installed:" \
             "run it as root (e.g. su -c $0)" >&2
        exit 1
    fi
    exec sudo "$0" "$@"
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "setup-debian.sh: apt-get not found: this script is for Debian and Ubuntu" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends \
    cmake build-essential pkg-config \
    ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo \
    libcriterion-dev libcfitsio-dev libpng-dev wcslib-dev valgrind oclgrind openmpi-bin libopenmpi-dev \
    python3 python3-venv python3-numpy python3-scipy python3-pytest python3-sep >/dev/null
echo "gpuws: build dependencies installed"
