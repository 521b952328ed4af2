# The vin-gateway layering rule, checked on every #include line of apps/vin-gateway/{core,
# service,http,config}/ (ctest: vin_gateway_layering, label unit):
#
#   main.cc --> http --> service --> core        config --> core
#
#   core/     may include core/ and the fusebox core. Not service/, http/, config/, Asio, Beast,
#             SQLite, OpenSSL, TOML, CLI11, nor fusebox/asio.h: it is pure (the fuzzers link only
#             it).
#   service/  may include core/, service/, fusebox (asio.h too), Asio, Beast (the upstream
#             client), OpenSSL, SQLite. Not http/ or config/, nor TOML or CLI11.
#   http/     may include core/, service/, http/, Asio, Beast, OpenSSL. Not config/ (main hands it
#             values), nor SQLite, TOML or CLI11 (the cache is the service's). The server itself
#             (http_server.*) knows only its own messages: not service/ nor the router.
#   config/   may include core/, config/, fusebox (not asio.h), TOML, CLI11, Boost.URL. Not
#             service/ or http/, nor Asio, Beast or SQLite.
#   main.cc   wires them all; not checked.
#
#   cmake -DGATEWAY_DIR=apps/vin-gateway -P tests/vin_gateway/check_layers.cmake
# Fails (FATAL_ERROR) listing every offending line; also fails when a layer has no sources, so a
# moved folder cannot silently pass.
if(NOT GATEWAY_DIR)
  message(FATAL_ERROR "usage: cmake -DGATEWAY_DIR=<apps/vin-gateway> -P check_layers.cmake")
endif()
get_filename_component(GATEWAY_DIR "${GATEWAY_DIR}" ABSOLUTE)

set(forbidden_core "\"service/" "\"http/" "\"config/" "<boost/asio" "<boost/beast" "<sqlite3"
    "<openssl/" "<toml" "<CLI/" "\"fusebox/asio.h\"")
set(forbidden_service "\"http/" "\"config/" "<toml" "<CLI/")
set(forbidden_http "\"config/" "<sqlite3" "<toml" "<CLI/")
set(forbidden_http_server "\"service/" "\"http/router.h\"" "\"http/route_deps.h\"")
set(forbidden_config "\"service/" "\"http/" "<boost/asio" "<boost/beast" "<sqlite3"
    "\"fusebox/asio.h\"")

set(violations "")
foreach(layer core service http config)
  file(GLOB sources "${GATEWAY_DIR}/${layer}/*.h" "${GATEWAY_DIR}/${layer}/*.cc")
  if(NOT sources)
    message(FATAL_ERROR "check_layers: no sources in ${GATEWAY_DIR}/${layer}/")
  endif()
  foreach(source IN LISTS sources)
    file(STRINGS "${source}" includes REGEX "^[ \t]*#[ \t]*include")
    set(patterns ${forbidden_${layer}})
    get_filename_component(name "${source}" NAME_WE)
    if(layer STREQUAL "http" AND name STREQUAL "http_server")
      list(APPEND patterns ${forbidden_http_server})
    endif()
    foreach(line IN LISTS includes)
      foreach(pattern IN LISTS patterns)
        string(FIND "${line}" "${pattern}" at)
        if(NOT at EQUAL -1)
          file(RELATIVE_PATH shown "${GATEWAY_DIR}" "${source}")
          string(APPEND violations "  ${shown}: ${line}  (${layer}/ may not include ${pattern})\n")
        endif()
      endforeach()
    endforeach()
  endforeach()
endforeach()

if(violations)
  message(FATAL_ERROR "vin-gateway layering broken (see tests/vin_gateway/check_layers.cmake):\n"
                      "${violations}")
endif()
message(STATUS "vin-gateway layering holds")
