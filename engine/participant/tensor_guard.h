// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "engine/common/tensor_buffer.h"

namespace rookery::participant {

/// Checks the float32 tensors one pipeline neighbour sends (activations from the
/// previous stage, or gradients from the next) before the stage uses them: every value
/// finite, and the root mean square within kMaxRatio of the running scale of the
/// tensors accepted so far (a moving average of log RMS). Until kWarmUp tensors have
/// been accepted there is no scale yet, and the RMS must be at most kWarmUpLimit.
/// Other dtypes and empty tensors pass.
///
/// Thread safety: none; one per direction, used under its transport's lock.
class TensorGuard
{
public:
    static constexpr double kMaxRatio = 1000;
    static constexpr int64_t kWarmUp = 16;
    static constexpr double kWarmUpLimit = 1e4;

    /// nullopt: use it; otherwise why not ("non-finite values", "an RMS 1e+06 times ...").
    std::optional<std::string> check(const TensorBuffer &tensor);
    int64_t refused() const { return m_refused; }

private:
    double m_logScale = 0;
    int64_t m_accepted = 0;
    int64_t m_refused = 0;
};

} // namespace rookery::participant
