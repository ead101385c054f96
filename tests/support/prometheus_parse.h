// SPDX-License-Identifier: GPL-3.0-or-later
// A strict reader of Prometheus' text exposition format 0.0.4, for tests of /metrics.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace rookery::test {

struct PrometheusSample
{
    std::string name;
    std::map<std::string, std::string> labels;
    double value = 0;
};

struct PrometheusExposition
{
    std::vector<PrometheusSample> samples;
    std::map<std::string, std::string> types; ///< family -> counter, gauge, ...
    std::map<std::string, std::string> help;  ///< family -> docstring (unescaped)
    std::string error;                        ///< "line N: what is wrong"; empty when valid

    /// The value of the sample with this name and exactly these labels.
    std::optional<double> value(const std::string &name, const std::map<std::string, std::string> &labels = {}) const;
};

/// Checks every line against the format: HELP and TYPE lines (at most one of each per
/// family, TYPE before the family's samples, a known type), metric and label names by
/// the grammar, quoted and escaped label values, numeric values (NaN and ±Inf included),
/// each family's samples together, no sample twice, counters not negative, and a final
/// newline. Every family here must have HELP and TYPE (our own rule, stricter than the
/// format's).
PrometheusExposition parsePrometheusText(const std::string &text);

} // namespace rookery::test
