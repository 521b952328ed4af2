# Man pages generated at build time from the programs' own output (help2man), so that a page
# shows the same option tables as --help and cannot drift from them. What --help lacks (FILES,
# SIGNALS, EXIT STATUS, SEE ALSO...) comes from an include file next to the page's declaration.
#
# Included (from man/CMakeLists.txt), this file defines
#
#   fusebox_add_man_page(<page> PROGRAM <target> SECTION <n> NAME <one line> INCLUDE <file.h2m>
#                        COMPONENT <install component> [HELP_OPTION <argument>] [MANUAL <title>])
#
# which builds <build>/man/<page>.<n>.gz as part of `all` and installs it to
# ${CMAKE_INSTALL_MANDIR}/man<n> in COMPONENT (the Debian package it goes in,
# cmake/packaging.cmake). HELP_OPTION replaces --help (fusebox-scenario(5) is made from
# `fusebox-sim format`). Without help2man (and in sanitizer or cross builds) the pages are skipped
# with a STATUS message, and FUSEBOX_MAN_PAGES is OFF.
#
# Run as a script (cmake -P, by the custom command below) it makes one page: help2man, three
# rewrites of its roff (headings, quotes, commands: below), then gzip -9n (no name or time stamp
# in the .gz). The page's date is help2man's: the build's month, or SOURCE_DATE_EPOCH's when set
# (Debian's builds set it, for reproducible packages).

if(CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  # ---- script mode: one page ----
  # Arguments: HELP2MAN GZIP PROGRAM PAGE SECTION NAME INCLUDE HELP_OPTION MANUAL SOURCE VERSION
  # OUTPUT (the .gz).
  set(roff "${OUTPUT}.roff")
  execute_process(
    COMMAND "${HELP2MAN}" --no-info "--section=${SECTION}" "--name=${NAME}"
            "--manual=${MANUAL}" "--source=${SOURCE}" "--version-string=${PAGE} ${VERSION}"
            "--help-option=${HELP_OPTION}" "--include=${INCLUDE}" "--output=${roff}" "${PROGRAM}"
    RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "help2man failed for ${PAGE}(${SECTION}): ${status}")
  endif()
  file(READ "${roff}" text)
  # A line of capitals alone at the left margin of --help ("EXIT STATUS", "OUTPUT": fusebox-sim's
  # footer) is a section heading there, which help2man takes for a paragraph. It becomes a section
  # (.SH); a parenthesis after it, the section's first line.
  string(REGEX REPLACE "\n\\.PP\n([A-Z][A-Z]+( [A-Z]+)*) (\\([^\n]*\\))\n"
         "\n.SH \"\\1\"\n\\3\n.PP\n" text "${text}")
  string(REGEX REPLACE "\n\\.PP\n([A-Z][A-Z]+( [A-Z]+)*)\n" "\n.SH \"\\1\"\n" text "${text}")
  # help2man quotes a subsection's heading but not the quotes in it (vpic-sim's 'POST
  # /__control/faults {"mode": ...}'); inside a quoted roff argument a quote is written twice.
  string(REGEX MATCHALL "\n\\.SS \"[^\n]*\"\n" headings "${text}")
  foreach(heading IN LISTS headings)
    # (A heading with a ';' arrives in pieces, which this leaves alone.)
    if(heading MATCHES "^\n\\.SS \"(.*)\"\n$")
      string(REPLACE "\"" "\"\"" inner "${CMAKE_MATCH_1}")
      string(REPLACE "${heading}" "\n.SS \"${inner}\"\n" text "${text}")
    endif()
  endforeach()
  # help2man sets lines of --help that start with "$ " as commands, but fills them: a long one is
  # spread over the line or broken in two, and its hyphens are left to become typographic ones.
  # They are set unfilled, with the minus signs a shell needs.
  string(REGEX MATCHALL "\n\\.IP\n\\\\f\\(CW\\$ [^\n]*\n(\\.br\n\\\\f\\(CW\\$ [^\n]*\n)*"
         examples "${text}")
  foreach(block IN LISTS examples)
    if(block MATCHES "^\n\\.IP\n(.*)$")
      string(REPLACE "\n.br\n" "\n" commands "${CMAKE_MATCH_1}")
      string(REPLACE "-" "\\-" commands "${commands}")
      string(REPLACE "${block}" "\n.IP\n.nf\n${commands}.fi\n" text "${text}")
    endif()
  endforeach()
  file(WRITE "${roff}" "${text}")
  execute_process(COMMAND "${GZIP}" -9nf "${roff}" RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "gzip failed for ${PAGE}(${SECTION}): ${status}")
  endif()
  file(RENAME "${roff}.gz" "${OUTPUT}")
  return()
endif()

# ---- included: the function ----
find_program(FUSEBOX_HELP2MAN help2man)
find_program(FUSEBOX_GZIP gzip)
set(FUSEBOX_MAN_PAGES OFF)
if(NOT FUSEBOX_HELP2MAN OR NOT FUSEBOX_GZIP)
  message(STATUS "help2man (or gzip) not found: the man pages are not built "
                 "(Debian: apt-get install help2man)")
elseif(FUSEBOX_SANITIZE OR CMAKE_CROSSCOMPILING)
  # The pages run the programs: a sanitizer's report on stderr would land in them (help2man reads
  # both streams), and a cross-built program does not run here. Packages come from release builds.
  message(STATUS "Sanitizer or cross build: the man pages are not built")
else()
  set(FUSEBOX_MAN_PAGES ON)
endif()

set(fusebox_man_pages_script "${CMAKE_CURRENT_LIST_FILE}")

function(fusebox_add_man_page page)
  cmake_parse_arguments(ARG "" "PROGRAM;SECTION;NAME;INCLUDE;HELP_OPTION;MANUAL;COMPONENT" "" ${ARGN})
  if(NOT FUSEBOX_MAN_PAGES)
    return()
  endif()
  if(NOT ARG_HELP_OPTION)
    set(ARG_HELP_OPTION "--help")
  endif()
  if(NOT ARG_MANUAL)
    # help2man's defaults for 1 and 8; the name man-pages(7) gives section 5.
    if(ARG_SECTION STREQUAL "8")
      set(ARG_MANUAL "System Administration Utilities")
    elseif(ARG_SECTION STREQUAL "5")
      set(ARG_MANUAL "File Formats Manual")
    else()
      set(ARG_MANUAL "User Commands")
    endif()
  endif()
  set(output "${PROJECT_BINARY_DIR}/man/${page}.${ARG_SECTION}.gz")
  add_custom_command(
    OUTPUT "${output}"
    COMMAND "${CMAKE_COMMAND}" -E make_directory "${PROJECT_BINARY_DIR}/man"
    COMMAND "${CMAKE_COMMAND}" "-DHELP2MAN=${FUSEBOX_HELP2MAN}" "-DGZIP=${FUSEBOX_GZIP}"
            "-DPROGRAM=$<TARGET_FILE:${ARG_PROGRAM}>" "-DPAGE=${page}" "-DSECTION=${ARG_SECTION}"
            "-DNAME=${ARG_NAME}" "-DINCLUDE=${ARG_INCLUDE}" "-DHELP_OPTION=${ARG_HELP_OPTION}"
            "-DMANUAL=${ARG_MANUAL}" "-DSOURCE=fusebox ${PROJECT_VERSION}"
            "-DVERSION=${PROJECT_VERSION}" "-DOUTPUT=${output}" -P "${fusebox_man_pages_script}"
    DEPENDS ${ARG_PROGRAM} "${ARG_INCLUDE}" "${fusebox_man_pages_script}"
    COMMENT "Generating the man page ${page}(${ARG_SECTION})"
    VERBATIM)
  add_custom_target(man_${page} ALL DEPENDS "${output}")
  install(FILES "${output}" DESTINATION "${CMAKE_INSTALL_MANDIR}/man${ARG_SECTION}"
          COMPONENT ${ARG_COMPONENT})
endfunction()
