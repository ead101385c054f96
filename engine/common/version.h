// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

namespace rookery {

/// The release version, from the top-level CMakeLists.txt.
extern const char *const kVersion;

} // namespace rookery
