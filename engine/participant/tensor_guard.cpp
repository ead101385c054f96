// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/participant/tensor_guard.h"

#include <cmath>
#include <cstring>

#include <algorithm>
#include <cstdio>

namespace rookery::participant {
namespace {

std::string g3(double x)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.3g", x);
    return text;
}

} // namespace

std::optional<std::string> TensorGuard::check(const TensorBuffer &t)
{
    if (t.dtype != DType::Float32 || t.empty() || t.bytes < sizeof(float))
        return std::nullopt;
    const size_t n = t.bytes / sizeof(float);
    double sum = 0;
    for (size_t i = 0; i < n; ++i) {
        float x;
        std::memcpy(&x, t.data + i * sizeof(float), sizeof x);
        if (!std::isfinite(x)) {
            ++m_refused;
            return std::string("non-finite values (element ") + std::to_string(i) + " of " + std::to_string(n) + ")";
        }
        sum += double(x) * double(x);
    }
    const double rms = std::sqrt(sum / double(n));
    if (m_accepted < kWarmUp) {
        if (rms > kWarmUpLimit) {
            ++m_refused;
            return "an RMS of " + g3(rms) + ", over " + g3(kWarmUpLimit) + " before any scale is known";
        }
    } else if (const double scale = std::exp(m_logScale); rms > kMaxRatio * scale) {
        ++m_refused;
        return "an RMS of " + g3(rms) + ", " + g3(rms / scale) + " times the usual " + g3(scale);
    }
    if (rms > 0) {
        const double l = std::log(rms);
        m_logScale = m_accepted == 0 ? l : 0.95 * m_logScale + 0.05 * l;
    }
    ++m_accepted;
    return std::nullopt;
}

} // namespace rookery::participant
