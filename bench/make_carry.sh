#!/usr/bin/env bash
# Builds .carry/ (git-ignored): the headers and shared libraries the GPU machine lacks (Criterion, cfitsio,
# libpng, OpenCL headers and loader) with their dependencies, for bench/gpu_session.sh. Run on this machine
# after tools/setup-debian.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .carry && mkdir -p .carry/lib .carry/include
cp -r /usr/include/criterion /usr/include/CL /usr/include/libpng16 .carry/include/
cp /usr/include/fitsio.h /usr/include/fitsio2.h /usr/include/longnam.h /usr/include/png.h /usr/include/pngconf.h \
   /usr/include/pnglibconf.h .carry/include/
L=/usr/lib/x86_64-linux-gnu
for lib in $L/libcriterion.so.3 $L/libcfitsio.so.10 $L/libpng16.so.16 $L/libOpenCL.so.1; do
    cp -L "$lib" .carry/lib/
    ldd "$lib" | awk '/=>/{print $3}' | grep -vE 'libc\.so|libm\.so|ld-linux|libpthread|libdl\.so|librt\.so|libresolv' |
        xargs -I{} cp -Ln {} .carry/lib/
done
(cd .carry/lib && ln -sf libcriterion.so.3 libcriterion.so && ln -sf libcfitsio.so.10 libcfitsio.so &&
    ln -sf libpng16.so.16 libpng16.so && ln -sf libpng16.so.16 libpng.so)
du -sh .carry
