// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <string>

namespace rookery::format {

/// "1:02:03" or "2:03" for a number of seconds; "--:--" when unknown (negative).
std::string duration(double seconds);
/// "12.3 MiB", "512 B".
std::string bytes(double count);
/// "19,234" with thousands separators.
std::string count(int64_t value);
/// "12.5%" from a fraction in [0, 1].
std::string percent(double fraction, int decimals = 1);

} // namespace rookery::format
