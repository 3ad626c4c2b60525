# gating_bits.cmake - runs `EXE --hash` once per kernel path at 1 and 3
# threads and fails unless every run prints the same hash lines as the
# first: the operator's bits depend on neither. Written for
# MoeGatingTopKSoftmax(V2); GroupedMatmul uses it too (LINE, COUNT, ENVS).
#   cmake -DEXE=test_gating_top_k_softmax "-DISAS=scalar|avx2" "-DEMU=" -P gating_bits.cmake
#   optional: "-DLINE=gmm problem" -DCOUNT=12 "-DENVS=MOEFR_SOC=ascend910b" (extra environment, |-separated),
#   -DPER_ISA=1 (compare the thread counts within each kernel path, not the paths with each other)
if(NOT DEFINED LINE)
  set(LINE "gating problem")
endif()
if(NOT DEFINED COUNT)
  set(COUNT 36)
endif()
string(REPLACE "|" ";" envs "${ENVS}")
string(REPLACE "|" ";" isas "${ISAS}")
string(REPLACE "|" ";" emu "${EMU}")
set(ref "")
foreach(isa ${isas})
  if(PER_ISA)
    set(ref "") # each path against itself only (GroupedMatmul's avx512 path may multiply on oneDNN)
  endif()
  foreach(nt 1 3)
    execute_process(COMMAND ${CMAKE_COMMAND} -E env ${envs} MOEFR_ISA=${isa} MOEFR_NUM_THREADS=${nt} ${emu} ${EXE} --hash
      OUTPUT_VARIABLE out RESULT_VARIABLE rc ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "${EXE} --hash (MOEFR_ISA=${isa} MOEFR_NUM_THREADS=${nt}) exited ${rc}:\n${out}${err}")
    endif()
    string(REGEX MATCHALL "${LINE} [0-9]+" lines "${out}")
    list(LENGTH lines n)
    if(n LESS ${COUNT})
      message(FATAL_ERROR "${EXE} --hash printed ${n} problems, want ${COUNT}:\n${out}")
    endif()
    if(ref STREQUAL "")
      set(ref "${out}")
      set(ref_name "MOEFR_ISA=${isa} MOEFR_NUM_THREADS=${nt}")
    elseif(NOT out STREQUAL ref)
      message(FATAL_ERROR "${LINE} bits: MOEFR_ISA=${isa} MOEFR_NUM_THREADS=${nt} differ from ${ref_name}:\n"
        "${ref}\n---\n${out}")
    endif()
    message(STATUS "${LINE} bits: MOEFR_ISA=${isa} MOEFR_NUM_THREADS=${nt}: same as ${ref_name}")
  endforeach()
endforeach()
