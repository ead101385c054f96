# SPDX-License-Identifier: GPL-3.0-or-later
# Third-party packages, all from Debian 12. installer/setup.sh installs them.

find_package(Threads REQUIRED)
find_package(SQLite3 REQUIRED)
find_package(ZLIB REQUIRED)
find_package(OpenSSL 3 REQUIRED)
find_package(Boost 1.74 REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(Protobuf REQUIRED)

# CLI11 (libcli11-dev), header-only: the programs' command lines. Debian ships its CMake
# config in /usr/share/cmake/CLI11; a copy without one still has the headers.
find_package(CLI11 2.1 CONFIG QUIET)
if(NOT TARGET CLI11::CLI11)
    find_path(ROOKERY_CLI11_INCLUDE_DIR CLI/CLI.hpp REQUIRED)
    add_library(CLI11::CLI11 INTERFACE IMPORTED)
    target_include_directories(CLI11::CLI11 SYSTEM INTERFACE "${ROOKERY_CLI11_INCLUDE_DIR}")
endif()

# LibTorch. Its config pulls in Caffe2's, which is chatty and sets global state;
# we wrap it in one interface target whose headers are SYSTEM so our warnings stay ours.
find_package(Torch REQUIRED)
add_library(rookery_torch INTERFACE)
target_link_libraries(rookery_torch INTERFACE ${TORCH_LIBRARIES} ${CMAKE_DL_LIBS})
target_include_directories(rookery_torch SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS})
target_compile_definitions(rookery_torch INTERFACE _GLIBCXX_USE_CXX11_ABI=1)

add_library(rookery_boost INTERFACE)
target_include_directories(rookery_boost SYSTEM INTERFACE ${Boost_INCLUDE_DIRS})
target_compile_definitions(rookery_boost INTERFACE
    BOOST_ASIO_NO_DEPRECATED BOOST_BEAST_USE_STD_STRING_VIEW)
target_link_libraries(rookery_boost INTERFACE Threads::Threads)

if(ROOKERY_BUILD_UI OR ROOKERY_BUILD_TESTS)
    set(_qt_components Core)
    if(ROOKERY_BUILD_UI)
        list(APPEND _qt_components Gui Widgets Charts Svg SvgWidgets)
    endif()
    if(ROOKERY_BUILD_TESTS)
        list(APPEND _qt_components Test)
    endif()
    find_package(Qt6 6.4 REQUIRED COMPONENTS ${_qt_components})
endif()
