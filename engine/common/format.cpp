// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/common/format.h"

#include <cmath>
#include <cstdio>

namespace rookery::format {

std::string duration(double seconds)
{
    if (!(seconds >= 0) || !std::isfinite(seconds))
        return "--:--";
    auto total = int64_t(std::llround(seconds));
    const int64_t h = total / 3600, m = (total / 60) % 60, s = total % 60;
    char buf[32];
    if (h > 0)
        std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", (long long)h, (long long)m, (long long)s);
    else
        std::snprintf(buf, sizeof buf, "%lld:%02lld", (long long)m, (long long)s);
    return buf;
}

std::string bytes(double count)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int unit = 0;
    while (std::fabs(count) >= 1024 && unit < 4) {
        count /= 1024;
        ++unit;
    }
    char buf[32];
    if (unit == 0)
        std::snprintf(buf, sizeof buf, "%.0f %s", count, units[unit]);
    else
        std::snprintf(buf, sizeof buf, "%.1f %s", count, units[unit]);
    return buf;
}

std::string count(int64_t value)
{
    std::string digits = std::to_string(value < 0 ? -value : value);
    std::string out;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0)
            out += ',';
        out += digits[i];
    }
    return value < 0 ? "-" + out : out;
}

std::string percent(double fraction, int decimals)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*f%%", decimals, fraction * 100.0);
    return buf;
}

} // namespace rookery::format
