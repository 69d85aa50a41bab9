# Writes OUT (a header defining FSRR_GIT_COMMIT) from the source tree's git commit, and only
# when it changed, so a build recompiles main.cc once per commit. A tree without git (a source
# package) says "unknown" unless configured with -DFSRR_GIT_COMMIT=...
if(COMMIT STREQUAL "")
  # the commit itself (describe would name a tag once there is one), "-dirty" when tracked
  # files differ from it
  execute_process(COMMAND git -C "${SRC}" rev-parse --short=12 HEAD
                  OUTPUT_VARIABLE COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE rc ERROR_QUIET)
  if(NOT rc EQUAL 0 OR COMMIT STREQUAL "")
    set(COMMIT "unknown")
  else()
    execute_process(COMMAND git -C "${SRC}" status --porcelain --untracked-files=no
                    OUTPUT_VARIABLE changes ERROR_QUIET)
    if(NOT changes STREQUAL "")
      string(APPEND COMMIT "-dirty")
    endif()
  endif()
endif()
set(text "#define FSRR_GIT_COMMIT \"${COMMIT}\"\n")
set(old "")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
