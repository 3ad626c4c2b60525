# Cross-build for aarch64 Linux with Debian's toolchain (gcc-aarch64-linux-gnu,
# g++-aarch64-linux-gnu, libc6-dev-arm64-cross); tests and try_run() probes run
# under qemu-user with the cross sysroot (qemu-user). Used by `make test-aarch64`:
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(MOEFR_CROSS_TRIPLE aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${MOEFR_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${MOEFR_CROSS_TRIPLE}-g++)

# Debian's multiarch cross sysroot: libc, libstdc++ and the dynamic loader.
set(MOEFR_CROSS_SYSROOT /usr/${MOEFR_CROSS_TRIPLE} CACHE PATH "aarch64 sysroot qemu loads libraries from")
set(CMAKE_FIND_ROOT_PATH ${MOEFR_CROSS_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# add_test() commands naming a built target, and try_run(), go through this.
# Programs run against the multiarch arm64 root (/lib/aarch64-linux-gnu, libc6:arm64 and
# libstdc++6:arm64), which the BLAS's arm64 package (libblis) brings: with the sysroot as qemu's
# prefix, the sysroot's loader would find that multiarch glibc before its own (qemu falls
# back to the host path) and hang in pthread_create on the mix. Building still uses the
# sysroot; Debian's cross glibc and its arm64 glibc are the same release.
find_program(MOEFR_QEMU_AARCH64 qemu-aarch64 REQUIRED)
set(MOEFR_CROSS_RUNROOT / CACHE PATH "aarch64 root qemu loads libraries from")
set(CMAKE_CROSSCOMPILING_EMULATOR ${MOEFR_QEMU_AARCH64};-L;${MOEFR_CROSS_RUNROOT})
