// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rookery {

/// Writes metrics in Prometheus' text exposition format, version 0.0.4: for each
/// family a `# HELP` and a `# TYPE` line, then its samples, one per line. Metric and
/// label names are checked against the format's grammar (a bad name is a programming
/// error and throws std::invalid_argument); help text and label values are escaped.
///
/// Thread safety: a plain value; use from one thread.
class PrometheusText
{
public:
    /// What GET /metrics answers with in its Content-Type header.
    static constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

    enum class Type { Counter, Gauge };
    using Labels = std::vector<std::pair<std::string, std::string>>;

    /// Starts a family: its HELP and TYPE lines. Its samples follow with sample().
    PrometheusText &family(std::string_view name, Type type, std::string_view help);
    /// A sample of the family started last.
    PrometheusText &sample(double value, const Labels &labels = {});

    /// A family of one sample.
    PrometheusText &gauge(std::string_view name, std::string_view help, double value, const Labels &labels = {});
    PrometheusText &counter(std::string_view name, std::string_view help, double value, const Labels &labels = {});

    const std::string &text() const { return m_text; }

    /// `[a-zA-Z_:][a-zA-Z0-9_:]*`
    static bool isMetricName(std::string_view name);
    /// `[a-zA-Z_][a-zA-Z0-9_]*`, and not starting with "__" (reserved)
    static bool isLabelName(std::string_view name);
    /// A value as the format writes it: integers without exponent, NaN, +Inf, -Inf.
    static std::string formatValue(double value);

private:
    std::string m_text;
    std::string m_family;
    std::vector<std::string> m_families;
};

} // namespace rookery
