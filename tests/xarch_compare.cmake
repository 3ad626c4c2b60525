# xarch_compare.cmake - runs xarch_hash (tests/xarch_hash.c) once per kernel
# path, at 1 and 3 threads and in the backward's row order, and fails unless
# every run prints the same lines as the first (scalar, 1 thread).
#   cmake -DEXE=xarch_hash "-DISAS=scalar|avx2" "-DEMU=qemu-aarch64|-L|/sysroot" -P xarch_compare.cmake
string(REPLACE "|" ";" isas "${ISAS}")
string(REPLACE "|" ";" emu "${EMU}")
set(ref "")
foreach(isa ${isas})
  foreach(env "MOEFR_NUM_THREADS=1" "MOEFR_NUM_THREADS=3" "MOEFR_NUM_THREADS=2;MOEFR_GRAD_ORDER=row")
    execute_process(COMMAND ${CMAKE_COMMAND} -E env MOEFR_ISA=${isa} ${env} ${emu} ${EXE}
      OUTPUT_VARIABLE out RESULT_VARIABLE rc ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "xarch_hash (MOEFR_ISA=${isa} ${env}) exited ${rc}:\n${err}")
    endif()
    string(LENGTH "${out}" n)
    if(n LESS 1000)
      message(FATAL_ERROR "xarch_hash (MOEFR_ISA=${isa} ${env}) printed too little:\n${out}")
    endif()
    if(ref STREQUAL "")
      set(ref "${out}")
      set(ref_name "MOEFR_ISA=${isa} ${env}")
    elseif(NOT out STREQUAL ref)
      file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/xarch_ref.txt "${ref}")
      file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/xarch_bad.txt "${out}")
      message(FATAL_ERROR "xarch_hash: MOEFR_ISA=${isa} ${env} differs from ${ref_name}; "
        "diff ${CMAKE_CURRENT_BINARY_DIR}/xarch_ref.txt ${CMAKE_CURRENT_BINARY_DIR}/xarch_bad.txt")
    endif()
    message(STATUS "xarch_hash: MOEFR_ISA=${isa} ${env}: same lines as ${ref_name}")
  endforeach()
endforeach()
