# SPDX-License-Identifier: GPL-3.0-or-later
# install() rules and Debian packages (CPack DEB, `cpack -G DEB` in the build directory),
# one package per component; docs/packaging.md explains the choices.
#
#   rookery              desktop       the Qt desktop app, its .desktop entry, AppStream
#                                      metainfo and icons (only with ROOKERY_BUILD_UI)
#   rookery-node         node          rookery-node, rookery-local-swarm, the systemd user unit
#   rookery-coordinator  coordinator   rookery-coordinator, the hardened systemd system unit
#
# The units name the programs under CPACK_PACKAGING_INSTALL_PREFIX (/usr): they are
# written for the packages, not for `cmake --install` into another prefix.

include(GNUInstallDirs)

set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(ROOKERY_UNIT_BINDIR "${CPACK_PACKAGING_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}")
set(_units "${CMAKE_BINARY_DIR}/systemd")
configure_file(installer/systemd/rookery-node.service.in "${_units}/user/rookery-node.service" @ONLY)
configure_file(installer/systemd/rookery-coordinator.service.in "${_units}/system/rookery-coordinator.service" @ONLY)

# ---- rookery-node ----------------------------------------------------------------
install(TARGETS rookery-node rookery-local-swarm RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT node)
install(FILES "${_units}/user/rookery-node.service" DESTINATION lib/systemd/user COMPONENT node)
install(FILES docs/user-guide.md DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/rookery-node COMPONENT node)

# ---- rookery-coordinator ---------------------------------------------------------
install(TARGETS rookery-coordinator RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT coordinator)
install(FILES "${_units}/system/rookery-coordinator.service" DESTINATION lib/systemd/system COMPONENT coordinator)
install(FILES docs/operator-guide.md docs/coordinator-api.md
        DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/rookery-coordinator COMPONENT coordinator)

# ---- rookery (the desktop app) ---------------------------------------------------
if(ROOKERY_BUILD_UI)
    install(TARGETS rookery RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT desktop)
    install(FILES resources/rookery.desktop DESTINATION ${CMAKE_INSTALL_DATADIR}/applications COMPONENT desktop)
    install(FILES resources/rookery.metainfo.xml DESTINATION ${CMAKE_INSTALL_DATADIR}/metainfo
            RENAME invalid.rookery.Rookery.metainfo.xml COMPONENT desktop)
    install(FILES resources/icons/rookery.svg DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps
            COMPONENT desktop)

    # The hicolor PNGs, drawn from the SVG at build time by Qt's SVG renderer.
    add_executable(rookery_render_icons installer/render_icons.cpp)
    target_link_libraries(rookery_render_icons PRIVATE Qt6::Gui Qt6::Svg rookery_warnings)
    rookery_qt_target(rookery_render_icons)
    set(ROOKERY_ICON_SIZES 16 22 24 32 48 64 128 256 512)
    set(_icons "${CMAKE_BINARY_DIR}/icons/hicolor")
    set(_pngs)
    foreach(size IN LISTS ROOKERY_ICON_SIZES)
        list(APPEND _pngs "${_icons}/${size}x${size}/apps/rookery.png")
    endforeach()
    add_custom_command(OUTPUT ${_pngs}
        COMMAND rookery_render_icons "${CMAKE_SOURCE_DIR}/resources/icons/rookery.svg" "${_icons}" rookery
                ${ROOKERY_ICON_SIZES}
        DEPENDS rookery_render_icons "${CMAKE_SOURCE_DIR}/resources/icons/rookery.svg"
        COMMENT "Drawing the hicolor icons"
        VERBATIM)
    add_custom_target(rookery_icons ALL DEPENDS ${_pngs})
    install(DIRECTORY "${_icons}" DESTINATION ${CMAKE_INSTALL_DATADIR}/icons COMPONENT desktop)
endif()

# ---- CPack -----------------------------------------------------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME rookery)
set(CPACK_PACKAGE_VENDOR "The Rookery contributors")
set(CPACK_PACKAGE_CONTACT "Rookery maintainers <maintainers@rookery.invalid>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_HOMEPAGE_URL ${PROJECT_HOMEPAGE_URL})
# CPackDeb writes CPACK_PACKAGE_DESCRIPTION_SUMMARY above every package's description
# unless the summary is CPack's default text, which it then leaves out: so it is that,
# and the first line of each CPACK_DEBIAN_<COMPONENT>_DESCRIPTION is the synopsis.
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${CMAKE_PROJECT_NAME} built using CMake")
set(CPACK_STRIP_FILES ON) # the build has debug info; the packages need none
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON) # CPACK_COMPONENT_<C>_DEPENDS become Depends: <package> (= version)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_COMPRESSION_TYPE gzip) # xz takes minutes over LibTorch-sized programs
# Library dependencies as dpkg-shlibdeps finds them (LibTorch, Qt, OpenSSL, SQLite ...).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS OFF)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

set(CPACK_COMPONENTS_ALL node coordinator)
if(ROOKERY_BUILD_UI)
    list(PREPEND CPACK_COMPONENTS_ALL desktop)
endif()

set(CPACK_DEBIAN_NODE_PACKAGE_NAME rookery-node)
set(CPACK_DEBIAN_NODE_PACKAGE_SECTION science)
# The data set every node trains on; OpenBLAS, since the reference BLAS made our MLP 6x slower.
set(CPACK_DEBIAN_NODE_PACKAGE_DEPENDS "dataset-fashion-mnist")
set(CPACK_DEBIAN_NODE_PACKAGE_RECOMMENDS "libopenblas0-pthread")
set(CPACK_DEBIAN_NODE_DESCRIPTION [=[
headless volunteer node for Rookery, which trains neural networks together
rookery-node trains a pipeline stage of a model for a Rookery swarm (or the whole
model on this machine) under a resource governor, checkpoints to SQLite and resumes
after a restart. It serves a local control API and Prometheus metrics, and ships
a systemd user unit. rookery-local-swarm starts a whole swarm on one machine.]=])
# rookery-local-swarm starts the coordinator as one of its processes.
set(CPACK_COMPONENT_NODE_DEPENDS coordinator)

set(CPACK_DEBIAN_COORDINATOR_PACKAGE_NAME rookery-coordinator)
set(CPACK_DEBIAN_COORDINATOR_PACKAGE_SECTION net)
set(CPACK_DEBIAN_COORDINATOR_DESCRIPTION [=[
coordinator of a Rookery volunteer swarm
rookery-coordinator registers volunteers, signs their certificates, plans clusters,
pipelines and rings, follows their heartbeats and re-plans as they come and go. It
serves its status over HTTPS with Prometheus metrics, and ships a hardened systemd
unit that is installed but not enabled.]=])
set(CPACK_DEBIAN_COORDINATOR_PACKAGE_CONTROL_EXTRA
    "${CMAKE_SOURCE_DIR}/installer/debian/coordinator/postinst;${CMAKE_SOURCE_DIR}/installer/debian/coordinator/prerm;${CMAKE_SOURCE_DIR}/installer/debian/coordinator/postrm")

set(CPACK_DEBIAN_DESKTOP_PACKAGE_NAME rookery)
set(CPACK_DEBIAN_DESKTOP_PACKAGE_SECTION science)
# Qt's SVG icon engine and its xcb platform plugin come with libqt6svg6 and libqt6gui6,
# which dpkg-shlibdeps finds from the libraries the app links.
set(CPACK_DEBIAN_DESKTOP_DESCRIPTION [=[
desktop app for Rookery: train neural networks together with other volunteers
Rookery lends this computer's spare time to a swarm of volunteers who train a neural
network together. Nothing computes until you consent; limits, schedule, idle and
battery rules keep the machine yours. It can also watch and steer a headless
rookery-node (rookery --attach).]=])
# The demo swarm runs rookery-node and rookery-coordinator as child processes.
set(CPACK_COMPONENT_DESKTOP_DEPENDS node)

include(CPack)
