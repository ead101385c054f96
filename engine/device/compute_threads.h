// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

#include "engine/device/thread_config.h"

namespace rookery::device {

/// Applies `config`. The torch part is per thread under OpenMP, so call this on every
/// thread that runs math, before it does; the BLAS part is process-wide.
///
/// Thread safety: may be called from any thread.
void applyThreadConfig(ThreadConfig config);

/// The configuration in force on the calling thread (torch's count is per thread,
/// BLAS's process-wide; blasThreads is 0 when the BLAS library does not say).
ThreadConfig currentThreadConfig();

/// The BLAS library's name and build, e.g. "OpenBLAS 0.3.21 ... SkylakeX", or
/// "unknown BLAS" when it does not say.
std::string blasDescription();

} // namespace rookery::device
