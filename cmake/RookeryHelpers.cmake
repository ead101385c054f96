# SPDX-License-Identifier: GPL-3.0-or-later
# rookery_engine_library(name SOURCES ... [TORCH] [DEPS ...])
#   One static library per engine folder. TORCH marks a library whose sources include
#   LibTorch: it reuses the one precompiled header, which saves ~20 s per file.

set(ROOKERY_SOURCE_ROOT "${CMAKE_CURRENT_LIST_DIR}/..")

function(rookery_engine_library name)
    cmake_parse_arguments(ARG "TORCH" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
    add_library(${name} STATIC ${ARG_SOURCES})
    target_include_directories(${name} PUBLIC "${ROOKERY_SOURCE_ROOT}")
    target_link_libraries(${name} PUBLIC ${ARG_DEPS} PRIVATE rookery_warnings ${ARG_PRIVATE_DEPS})
    if(ARG_TORCH)
        target_link_libraries(${name} PRIVATE rookery_torch)
        if(ROOKERY_USE_PCH)
            target_precompile_headers(${name} REUSE_FROM rookery_torch_pch)
        endif()
    endif()
endfunction()

# rookery_qt_target(name): the house rules for any target that uses Qt.
function(rookery_qt_target name)
    target_compile_definitions(${name} PRIVATE QT_NO_KEYWORDS
        QT_DISABLE_DEPRECATED_BEFORE=0x060000)
    set_target_properties(${name} PROPERTIES AUTOMOC ON)
endfunction()
