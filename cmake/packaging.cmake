# Debian packages, built by CPack from this build tree (scripts/package.sh; docs/install.md).
#
#   vin-gateway            the gateway, its man page, unit, conffile and alerting rules
#   vin-gateway-vpic-data  NHTSA's vPIC snapshot for offline decodes (recommended by vin-gateway)
#   vpic-sim, fusebox-sim  the tools
#   libfusebox-dev         headers, static libraries and CMake package files (find_package)
#
# Each package is a CPack component group of two components: the files a plain `cmake --install`
# also installs (under the prefix), and `*_deb`, EXCLUDE_FROM_ALL, the files only a Debian package
# carries: absolute paths (/etc, /lib/systemd) and /usr/share/doc/PACKAGE. The version is the
# project's (project(VERSION) in CMakeLists.txt), the one place it is written.

set(fusebox_deb_dir ${PROJECT_SOURCE_DIR}/packaging/deb)
set(fusebox_deb_out ${PROJECT_BINARY_DIR}/packaging)
set(fusebox_vpic_db ${PROJECT_SOURCE_DIR}/var/vpic/vpic.lite.db)

# /usr/share/doc/PACKAGE: copyright and the changelog Debian policy asks for (gzip -9n: the same
# bytes on every build).
# Everything the packages hold that a build makes (scripts/package.sh builds this target).
add_custom_target(fusebox_deb_files)
add_dependencies(fusebox_deb_files ${fusebox_installed_targets})
string(TIMESTAMP fusebox_deb_date "%a, %d %b %Y %H:%M:%S +0000" UTC)
function(fusebox_deb_docs package component copyright)
  set(PACKAGE ${package})
  set(VERSION ${PROJECT_VERSION})
  set(DATE ${fusebox_deb_date})
  configure_file(${fusebox_deb_dir}/changelog.in ${fusebox_deb_out}/${package}/changelog @ONLY)
  add_custom_command(
    OUTPUT ${fusebox_deb_out}/${package}/changelog.gz
    COMMAND gzip -9nf -k ${fusebox_deb_out}/${package}/changelog
    DEPENDS ${fusebox_deb_out}/${package}/changelog
    COMMENT "changelog.gz of ${package}")
  add_custom_target(fusebox_deb_changelog_${component} ALL
                    DEPENDS ${fusebox_deb_out}/${package}/changelog.gz)
  add_dependencies(fusebox_deb_files fusebox_deb_changelog_${component})
  install(FILES ${fusebox_deb_out}/${package}/changelog.gz
          DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${package}
          COMPONENT ${component}_deb EXCLUDE_FROM_ALL)
  install(FILES ${copyright} DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${package}
          RENAME copyright COMPONENT ${component}_deb EXCLUDE_FROM_ALL)
endfunction()

fusebox_deb_docs(libfusebox-dev dev ${fusebox_deb_dir}/copyright)

if(FUSEBOX_BUILD_APPS)
  fusebox_deb_docs(vin-gateway gateway ${fusebox_deb_dir}/copyright)
  fusebox_deb_docs(vpic-sim vpicsim ${fusebox_deb_dir}/copyright)
  fusebox_deb_docs(fusebox-sim fuseboxsim ${fusebox_deb_dir}/copyright)
  fusebox_deb_docs(vin-gateway-vpic-data vpicdata ${fusebox_deb_dir}/copyright-vpic-data)

  # /etc/vin-gateway/vin-gateway.toml: the gateway's own --print-config (every setting, commented,
  # from the table --help is made from) with the package's one difference: the cache in the state
  # directory systemd gives the unit.
  add_custom_command(
    OUTPUT ${fusebox_deb_out}/vin-gateway.toml
    COMMAND vin-gateway --print-config --cache sqlite:/var/lib/vin-gateway/vin-cache.sqlite
            > ${fusebox_deb_out}/vin-gateway.toml
    DEPENDS vin-gateway
    COMMENT "vin-gateway.toml for /etc/vin-gateway (vin-gateway --print-config)")
  add_custom_target(fusebox_deb_config ALL DEPENDS ${fusebox_deb_out}/vin-gateway.toml)
  add_dependencies(fusebox_deb_files fusebox_deb_config vin-gateway vpic-sim fusebox-sim)
  # The man pages (cmake/man_pages.cmake), when help2man made them.
  foreach(page IN ITEMS vin-gateway vpic-sim fusebox-sim fusebox-scenario)
    if(TARGET man_${page})
      add_dependencies(fusebox_deb_files man_${page})
    endif()
  endforeach()
  install(FILES ${fusebox_deb_out}/vin-gateway.toml DESTINATION /etc/vin-gateway
          COMPONENT gateway_deb EXCLUDE_FROM_ALL)
  install(FILES ${PROJECT_SOURCE_DIR}/packaging/systemd/vin-gateway.service
          DESTINATION /lib/systemd/system COMPONENT gateway_deb EXCLUDE_FROM_ALL)
  # The snapshot scripts/install-deps.sh fetched and checked; package.sh refuses to build without.
  install(FILES ${fusebox_vpic_db} DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/vin-gateway/vpic
          COMPONENT vpicdata_deb EXCLUDE_FROM_ALL OPTIONAL)
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME fusebox)
# Each package's description starts with its own synopsis (CPACK_DEBIAN_<GROUP>_DESCRIPTION);
# an empty summary keeps CPack from putting the project's in front of it.
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "the fusebox developers")
set(CPACK_PACKAGE_CONTACT "fusebox developers <fusebox-dev@lists.example.org>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR}/packages)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_GROUPING ONE_PER_GROUP)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION misc)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS OFF)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# gzip: 11 s for all five packages against xz's 79 s (the 75 MB snapshot), for 24 MB instead of
# 13 MB.
set(CPACK_DEBIAN_COMPRESSION_TYPE gzip)

string(CONCAT CPACK_DEBIAN_DEV_DESCRIPTION
    "circuit breakers for C++20: development files\n"
    "fusebox is a lock-free circuit breaker library with retry, bulkhead,\n"
    "adaptive concurrency limit, client-side throttling, single-flight, an Asio\n"
    "adapter and a fleet link over Redis. This package holds the headers, the\n"
    "static libraries and the CMake package files: find_package(fusebox) then\n"
    "link fusebox::fusebox (fusebox::asio and fusebox::redis need Boost's\n"
    "headers; fusebox::redis also libhiredis and libssl).")
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libfusebox-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_SHLIBDEPS OFF)
set(CPACK_DEBIAN_DEV_PACKAGE_RECOMMENDS "libboost1.81-dev | libboost-dev, libhiredis-dev, libssl-dev")
set(CPACK_COMPONENT_DEV_GROUP dev)
set(CPACK_COMPONENT_DEV_DEB_GROUP dev)
set(CPACK_COMPONENTS_ALL dev dev_deb)

if(FUSEBOX_BUILD_APPS)
  string(CONCAT CPACK_DEBIAN_GATEWAY_DESCRIPTION
      "VIN decodes in front of NHTSA vPIC, guarded by a circuit breaker\n"
      "vin-gateway answers VIN decodes from NHTSA's vPIC service. A circuit\n"
      "breaker keeps a slow or failing vPIC from freezing its clients: it answers\n"
      "from its cache (served stale, labelled as such) or from the offline vPIC\n"
      "snapshot meanwhile, and probes vPIC itself to learn when it is back. It\n"
      "runs as a systemd service under its own user, with its settings in\n"
      "/etc/vin-gateway/vin-gateway.toml and its cache in /var/lib/vin-gateway.")
  set(CPACK_DEBIAN_GATEWAY_PACKAGE_NAME vin-gateway)
  set(CPACK_DEBIAN_GATEWAY_PACKAGE_SECTION net)
  set(CPACK_DEBIAN_GATEWAY_PACKAGE_DEPENDS "adduser")
  set(CPACK_DEBIAN_GATEWAY_PACKAGE_RECOMMENDS "vin-gateway-vpic-data")
  set(CPACK_DEBIAN_GATEWAY_PACKAGE_SUGGESTS "prometheus")
  set(CPACK_DEBIAN_GATEWAY_PACKAGE_CONTROL_EXTRA
      "${fusebox_deb_dir}/vin-gateway/conffiles;${fusebox_deb_dir}/vin-gateway/postinst;${fusebox_deb_dir}/vin-gateway/prerm;${fusebox_deb_dir}/vin-gateway/postrm")
  set(CPACK_COMPONENT_GATEWAY_GROUP gateway)
  set(CPACK_COMPONENT_GATEWAY_DEB_GROUP gateway)

  string(CONCAT CPACK_DEBIAN_VPICDATA_DESCRIPTION
      "NHTSA vPIC database snapshot for vin-gateway's offline decodes\n"
      "The lite edition of NHTSA's vPIC database as SQLite, which vin-gateway\n"
      "reads to decode a VIN when vPIC cannot answer (labelled as an offline\n"
      "decode).")
  set(CPACK_DEBIAN_VPICDATA_PACKAGE_NAME vin-gateway-vpic-data)
  set(CPACK_DEBIAN_VPICDATA_PACKAGE_SECTION misc)
  set(CPACK_DEBIAN_VPICDATA_PACKAGE_ARCHITECTURE all)
  set(CPACK_DEBIAN_VPICDATA_PACKAGE_SHLIBDEPS OFF)
  set(CPACK_COMPONENT_VPICDATA_DEB_GROUP vpicdata)

  string(CONCAT CPACK_DEBIAN_VPICSIM_DESCRIPTION
      "local stand-in for NHTSA vPIC with fault injection\n"
      "vpic-sim serves vPIC's DecodeVinValues from recorded answers and injects\n"
      "faults on demand (errors, hangs, slow answers, a saturated queue), to test\n"
      "what sits in front of vPIC without touching the real service.")
  set(CPACK_DEBIAN_VPICSIM_PACKAGE_NAME vpic-sim)
  set(CPACK_DEBIAN_VPICSIM_PACKAGE_SECTION devel)
  set(CPACK_COMPONENT_VPICSIM_GROUP vpicsim)
  set(CPACK_COMPONENT_VPICSIM_DEB_GROUP vpicsim)

  string(CONCAT CPACK_DEBIAN_FUSEBOXSIM_DESCRIPTION
      "deterministic what-if simulator for fusebox circuit breakers\n"
      "fusebox-sim runs an outage scenario in virtual time against the real\n"
      "fusebox breaker and prints the exact trace and counters, or sweeps\n"
      "settings into a trade-off table.")
  set(CPACK_DEBIAN_FUSEBOXSIM_PACKAGE_NAME fusebox-sim)
  set(CPACK_DEBIAN_FUSEBOXSIM_PACKAGE_SECTION devel)
  set(CPACK_COMPONENT_FUSEBOXSIM_GROUP fuseboxsim)
  set(CPACK_COMPONENT_FUSEBOXSIM_DEB_GROUP fuseboxsim)

  list(APPEND CPACK_COMPONENTS_ALL gateway gateway_deb vpicdata_deb vpicsim vpicsim_deb
       fuseboxsim fuseboxsim_deb)
endif()

include(CPack)
