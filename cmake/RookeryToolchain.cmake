# SPDX-License-Identifier: GPL-3.0-or-later
# Compiler launcher, linker and warnings. Compile time is our bottleneck: ccache
# (with the sloppiness that precompiled headers need) and lld (or mold) when present. Paths under
# the source tree are hashed relative to it, and the working directory not at all, so a
# second checkout (a fresh clone before a commit) reuses the first one's cache; the cost
# is debug info naming the checkout that filled the cache.

if(ROOKERY_USE_CCACHE)
    find_program(ROOKERY_CCACHE ccache)
    if(ROOKERY_CCACHE)
        set(CMAKE_CXX_COMPILER_LAUNCHER
            ${CMAKE_COMMAND} -E env CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
            CCACHE_BASEDIR=${CMAKE_SOURCE_DIR} CCACHE_NOHASHDIR=1 ${ROOKERY_CCACHE})
        message(STATUS "Rookery: compiling through ccache")
    endif()
endif()

# lld first: Debian 12's mold (1.10.1) sometimes lays out a zero-size .tbss so that the
# RELRO segment starts one byte before its page, and the loader then refuses the program
# ("cannot apply additional memory protection after relocation: Cannot allocate
# memory"); tst_plan_state was one such binary, every time.
find_program(ROOKERY_MOLD mold)
find_program(ROOKERY_LLD ld.lld)
if(ROOKERY_LLD)
    add_link_options(-fuse-ld=lld)
    message(STATUS "Rookery: linking with lld")
elseif(ROOKERY_MOLD)
    add_link_options(-fuse-ld=mold)
    message(STATUS "Rookery: linking with mold")
endif()

# Warnings for our own targets only; third-party headers come in as SYSTEM includes.
add_library(rookery_warnings INTERFACE)
target_compile_options(rookery_warnings INTERFACE
    -Wall -Wextra -Wpedantic -Wshadow=local -Wnon-virtual-dtor -Wcast-align
    -Woverloaded-virtual -Wimplicit-fallthrough
    $<$<BOOL:${ROOKERY_WERROR}>:-Werror>)

if(ROOKERY_SANITIZE)
    add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
    add_link_options(-fsanitize=address,undefined)
    message(STATUS "Rookery: ASan + UBSan enabled")
endif()
