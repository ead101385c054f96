# SPDX-License-Identifier: GPL-3.0-or-later
# Every build switch in one place.

option(ROOKERY_BUILD_UI "Build the Qt desktop app (ui/ and app/desktop)" ON)
option(ROOKERY_BUILD_TESTS "Build the Qt Test suite" ON)
option(ROOKERY_BUILD_BENCH "Build the benchmarks in bench/" ON)
option(ROOKERY_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
option(ROOKERY_FUZZ "Build libFuzzer targets (needs clang)" OFF)
option(ROOKERY_WERROR "Treat warnings as errors" OFF)
option(ROOKERY_USE_CCACHE "Use ccache when it is installed" ON)
option(ROOKERY_USE_PCH "Precompile the LibTorch headers for the engine" ON)

if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
    set(CMAKE_BUILD_TYPE RelWithDebInfo CACHE STRING "Build type" FORCE)
endif()

set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
