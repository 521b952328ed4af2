# The repository's layering rule, checked on every #include line (ctest: layering, label unit).
# docs/architecture.md draws the same parts.
#
#   fusebox (include/fusebox, src)  the standard library only; fusebox/asio.h (target
#                                   fusebox::asio) alone may include Boost.Asio. Never an app.
#                                   Never hiredis.
#   fusebox::redis (redis_fleet.h,  the library, Boost.Asio, hiredis and OpenSSL: libcrypto (the
#     src/redis)                    fleet messages' HMAC) and libssl (rediss://, TLS to Redis);
#                                   no other third party, never an app.
#   apps/common                     the library, fmt and toml++; no Asio or Beast, no app.
#   apps/fusebox-sim                virtual time only: no Asio or Beast, no other app.
#   apps/vpic-sim                   may use Asio and Beast; never the gateway's layers.
#   apps/vin-gateway                never another app's files (fusebox-sim, vpic-sim), and in
#                                   six layers:  main.cc --> http --> service --> offline
#                                   --> core, config --> core, service and offline --> storage
#     core/     core/ and the fusebox core only. Not service/, http/, config/, Asio, Beast,
#               SQLite, OpenSSL, TOML, CLI11, nor fusebox/asio.h: it is pure (the fuzzers link
#               only it).
#     storage/  SQLite and the standard library only: the one wrapper of SQLite's C API.
#     offline/  core/, storage/, offline/, fusebox (not asio.h), SQLite, apps/common (vPIC's codes):
#               the decoder from NHTSA's vPIC database. Not service/, http/, config/, nor Asio,
#               Beast, OpenSSL, TOML or CLI11.
#     service/  core/, storage/, offline/, service/, fusebox (asio.h too), Asio, Beast (the
#               upstream client), OpenSSL, SQLite. Not http/ or config/, nor TOML or CLI11.
#     http/     core/, service/, http/, Asio, Beast, OpenSSL. Not config/ (main hands it values),
#               nor storage/, SQLite, TOML or CLI11 (the cache is the service's). The server itself
#               (http_server.*) knows only its own messages: not service/ nor the router.
#     config/   core/, config/, the apps' common grammar, fusebox (not asio.h), TOML, CLI11,
#               Boost.URL. Not service/ or http/, nor Asio, Beast or SQLite.
#     main.cc   wires them all; not checked beyond the app-wide rule.
#
#   cmake -DSOURCE_DIR=<repository root> -P tests/check_layers.cmake
# Fails (FATAL_ERROR) listing every offending line; also fails when a part has no sources, so a
# moved folder cannot silently pass.
cmake_minimum_required(VERSION 3.25)  # policies of this CMake (IN_LIST) in -P mode
if(NOT SOURCE_DIR)
  message(FATAL_ERROR "usage: cmake -DSOURCE_DIR=<repository root> -P check_layers.cmake")
endif()
get_filename_component(SOURCE_DIR "${SOURCE_DIR}" ABSOLUTE)

# The gateway's layer folders and the simulator's and stand-in's own headers, as includes.
set(gateway_includes "\"core/" "\"storage/" "\"offline/" "\"service/" "\"http/" "\"config/")
set(third_party "<boost/" "<fmt/" "<toml" "<sqlite3" "<CLI/" "<spdlog/" "<openssl/")
set(asio_beast "<boost/asio" "<boost/beast")
set(sim_includes "\"scenario.h\"" "\"simulator.h\"" "\"sweep.h\"" "\"report.h\"" "\"plot.h\"")
set(vpic_sim_includes "\"server.h\"" "\"fault_spec.h\"" "\"fault_engine.h\"" "\"vpic_api.h\""
    "\"recordings.h\"")

set(parts library redis common fusebox_sim vpic_sim vpic_sim_model vin_gateway gateway_core gateway_storage gateway_offline
    gateway_service gateway_http gateway_http_server gateway_config)
set(library_globs include/fusebox/*.h src/*.h src/*.cc)
set(library_forbidden ${third_party} "<hiredis" "\"common/" ${gateway_includes})
# fusebox/asio.h is the fusebox::asio target (Boost.Asio is its point); the redis files are the
# fusebox::redis target, checked below.
set(redis_files include/fusebox/redis_fleet.h include/fusebox/redis_url.h
    include/fusebox/redis_client.h src/redis/connection.h src/redis/connection.cc
    src/redis/redis_fleet.cc src/redis/redis_client.cc src/redis/redis_url.cc
    src/redis/fleet_signature.h src/redis/fleet_signature.cc)
set(library_exempt include/fusebox/asio.h include/fusebox/asio_prober.h ${redis_files})
set(redis_globs include/fusebox/redis_fleet.h include/fusebox/redis_url.h
    include/fusebox/redis_client.h src/redis/*.h src/redis/*.cc)
set(redis_forbidden "<boost/beast" "<fmt/" "<toml" "<sqlite3" "<CLI/" "<spdlog/" "\"common/"
    ${gateway_includes})
set(common_globs apps/common/*.h apps/common/*.cc)
set(common_forbidden ${asio_beast} ${gateway_includes} ${sim_includes} ${vpic_sim_includes})
set(fusebox_sim_globs apps/fusebox-sim/*.h apps/fusebox-sim/*.cc)
set(fusebox_sim_forbidden ${asio_beast} ${gateway_includes} ${vpic_sim_includes})
set(vpic_sim_globs apps/vpic-sim/*.h apps/vpic-sim/*.cc)
set(vpic_sim_forbidden ${gateway_includes} ${sim_includes})
# vpic_sim_model: all of vpic-sim but the server and main, built without the HTTP stack.
set(vpic_sim_model_globs apps/vpic-sim/*.h apps/vpic-sim/*.cc)
set(vpic_sim_model_exempt apps/vpic-sim/server.h apps/vpic-sim/server.cc apps/vpic-sim/main.cc)
set(vpic_sim_model_forbidden ${asio_beast} "<openssl/" "\"server.h\"")
set(vin_gateway_globs apps/vin-gateway/*.h apps/vin-gateway/*.cc)
set(vin_gateway_forbidden ${sim_includes} ${vpic_sim_includes})
set(gateway_core_globs apps/vin-gateway/core/*.h apps/vin-gateway/core/*.cc)
set(gateway_core_forbidden "\"storage/" "\"offline/" "\"service/" "\"http/" "\"config/" ${asio_beast} "<sqlite3"
    "<openssl/" "<toml" "<CLI/" "\"fusebox/asio.h\"" "\"fusebox/asio_prober.h\"")
set(gateway_storage_globs apps/vin-gateway/storage/*.h apps/vin-gateway/storage/*.cc)
set(gateway_storage_forbidden ${gateway_includes} ${asio_beast} "<openssl/" "<toml" "<CLI/" "<hiredis"
    "<fmt/" "\"fusebox/")
set(gateway_offline_globs apps/vin-gateway/offline/*.h apps/vin-gateway/offline/*.cc)
set(gateway_offline_forbidden "\"service/" "\"http/" "\"config/" ${asio_beast} "<openssl/" "<toml"
    "<CLI/" "<hiredis" "\"fusebox/asio.h\"" "\"fusebox/asio_prober.h\"" "\"fusebox/redis")
set(gateway_service_globs apps/vin-gateway/service/*.h apps/vin-gateway/service/*.cc)
set(gateway_service_forbidden "\"http/" "\"config/" "<toml" "<CLI/")
set(gateway_http_globs apps/vin-gateway/http/*.h apps/vin-gateway/http/*.cc)
set(gateway_http_forbidden "\"storage/" "\"config/" "<sqlite3" "<toml" "<CLI/")
set(gateway_http_server_globs apps/vin-gateway/http/http_server.*)
set(gateway_http_server_forbidden "\"service/" "\"http/router.h\"" "\"http/route_deps.h\"")
set(gateway_config_globs apps/vin-gateway/config/*.h apps/vin-gateway/config/*.cc)
set(gateway_config_forbidden "\"storage/" "\"offline/" "\"service/" "\"http/" ${asio_beast} "<sqlite3" "\"fusebox/asio.h\"" "\"fusebox/asio_prober.h\"")

set(violations "")
foreach(part IN LISTS parts)
  set(sources "")
  foreach(glob IN LISTS ${part}_globs)
    file(GLOB_RECURSE found "${SOURCE_DIR}/${glob}")
    list(APPEND sources ${found})
  endforeach()
  if(NOT sources)
    message(FATAL_ERROR "check_layers: no sources for ${part} (${${part}_globs})")
  endif()
  foreach(source IN LISTS sources)
    file(RELATIVE_PATH shown "${SOURCE_DIR}" "${source}")
    if(shown IN_LIST ${part}_exempt)
      continue()
    endif()
    file(STRINGS "${source}" includes REGEX "^[ \t]*#[ \t]*include")
    foreach(line IN LISTS includes)
      foreach(pattern IN LISTS ${part}_forbidden)
        string(FIND "${line}" "${pattern}" at)
        if(NOT at EQUAL -1)
          string(APPEND violations "  ${shown}: ${line}  (${part} may not include ${pattern})\n")
        endif()
      endforeach()
    endforeach()
  endforeach()
endforeach()

if(violations)
  message(FATAL_ERROR "layering broken (see tests/check_layers.cmake):\n${violations}")
endif()
message(STATUS "layering holds")
