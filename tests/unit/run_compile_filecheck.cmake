# `rocuda compile INPUT --target TARGET --emit EMIT -o -` (an AMD target, or `neutral` for the
# target-neutral IR) and FileCheck of INPUT's own check lines against the output, with PREFIXES
# (a file need not use the AMD tests' wave-size prefixes when nothing in it depends on the wave
# size; CHECK or ASM must match something).
execute_process(COMMAND ${ROCUDA} compile ${INPUT} --target ${TARGET} --emit ${EMIT} -o -
                OUTPUT_VARIABLE output ERROR_VARIABLE errors RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "rocuda compile ${INPUT} --target ${TARGET} --emit ${EMIT} failed (${rc}): ${errors}")
endif()
file(MAKE_DIRECTORY ${WORK_DIR})
get_filename_component(name ${INPUT} NAME_WE)
set(output_file ${WORK_DIR}/${name}.${TARGET}.${EMIT})
file(WRITE ${output_file} "${output}")
execute_process(COMMAND ${FILECHECK} ${INPUT} --check-prefixes=${PREFIXES}
                        --allow-unused-prefixes --input-file=${output_file}
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "FileCheck ${PREFIXES} failed on ${output_file}")
endif()
