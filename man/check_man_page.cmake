# ctest man_page.<page> (man/CMakeLists.txt): a generated page exists, says its NAME, documents a
# known option, and renders without a warning from groff (-ww) and with a NAME lexgrog (man-db's
# whatis parser, which lintian's checks follow) can read. groff and lexgrog checks are skipped
# when the tool is missing.
#
#   cmake -DPAGE=<file.gz> -DTITLE=<name> -DEXPECT=<text> -DGZIP=... [-DGROFF=...]
#         [-DLEXGROG=...] -P check_man_page.cmake
if(NOT EXISTS "${PAGE}")
  message(FATAL_ERROR "${PAGE} was not generated (build the target `all`)")
endif()
execute_process(COMMAND "${GZIP}" -dc "${PAGE}" OUTPUT_VARIABLE roff RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${PAGE}: not gzip: ${status}")
endif()
# The roff as text: fonts, hyphens and zero-width escapes taken out.
string(REGEX REPLACE "\\\\f(\\(..|.)" "" text "${roff}")
string(REPLACE "\\-" "-" text "${text}")
string(REPLACE "\\&" "" text "${text}")
string(REPLACE "\\," "" text "${text}")
string(REPLACE "\\/" "" text "${text}")
string(FIND "${text}" ".SH NAME\n${TITLE} - " at)
if(at EQUAL -1)
  message(FATAL_ERROR "${PAGE}: no NAME section naming ${TITLE}")
endif()
string(FIND "${text}" "${EXPECT}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${PAGE}: does not mention ${EXPECT}")
endif()

if(GROFF)
  execute_process(COMMAND "${GZIP}" -dc "${PAGE}"
                  COMMAND "${GROFF}" -man -Tutf8 -ww -z
                  ERROR_VARIABLE warnings RESULT_VARIABLE status)
  if(NOT status EQUAL 0 OR NOT warnings STREQUAL "")
    message(FATAL_ERROR "${PAGE}: groff -man -ww: ${status}\n${warnings}")
  endif()
endif()
if(LEXGROG)
  execute_process(COMMAND "${LEXGROG}" "${PAGE}" OUTPUT_VARIABLE whatis RESULT_VARIABLE status)
  string(FIND "${whatis}" "${TITLE} - " at)
  if(NOT status EQUAL 0 OR at EQUAL -1)
    message(FATAL_ERROR "${PAGE}: lexgrog cannot read its NAME: ${status}\n${whatis}")
  endif()
endif()
message(STATUS "${PAGE}: NAME ${TITLE}, mentions ${EXPECT}")
