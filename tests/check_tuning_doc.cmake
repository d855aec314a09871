# ctest tuning_doc: docs/tuning.md must be what `gpuws tuning --markdown` prints from core/tuning.h's list.
# Arguments: -DCLI=<the gpuws program> -DDOC=<docs/tuning.md>.
execute_process(COMMAND "${CLI}" tuning --markdown OUTPUT_VARIABLE generated RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "'${CLI} tuning --markdown' failed (${rc})")
endif()
file(READ "${DOC}" committed)
if(NOT generated STREQUAL committed)
  message(FATAL_ERROR "docs/tuning.md differs from the list in core/tuning.h; regenerate it with\n"
                      "  ${CLI} tuning --markdown > docs/tuning.md")
endif()
