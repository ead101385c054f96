// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/common/prometheus_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace rookery {
namespace {

bool isAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool isDigit(char c) { return c >= '0' && c <= '9'; }

// HELP text escapes backslash and newline; label values also the double quote.
std::string escape(std::string_view text, bool quote)
{
    std::string out;
    out.reserve(text.size());
    for (const char c : text) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '\n')
            out += "\\n";
        else if (c == '"' && quote)
            out += "\\\"";
        else
            out += c;
    }
    return out;
}

} // namespace

bool PrometheusText::isMetricName(std::string_view name)
{
    if (name.empty() || !(isAlpha(name[0]) || name[0] == ':'))
        return false;
    return std::all_of(name.begin(), name.end(), [](char c) { return isAlpha(c) || isDigit(c) || c == ':'; });
}

bool PrometheusText::isLabelName(std::string_view name)
{
    if (name.empty() || !isAlpha(name[0]) || name.starts_with("__"))
        return false;
    return std::all_of(name.begin(), name.end(), [](char c) { return isAlpha(c) || isDigit(c); });
}

std::string PrometheusText::formatValue(double value)
{
    if (std::isnan(value))
        return "NaN";
    if (std::isinf(value))
        return value > 0 ? "+Inf" : "-Inf";
    char buffer[32];
    // Whole numbers below 2^53 are exact in a double: write them as integers.
    if (value == std::floor(value) && std::fabs(value) < 9007199254740992.0)
        std::snprintf(buffer, sizeof buffer, "%.0f", value);
    else
        std::snprintf(buffer, sizeof buffer, "%.17g", value);
    return buffer;
}

PrometheusText &PrometheusText::family(std::string_view name, Type type, std::string_view help)
{
    if (!isMetricName(name))
        throw std::invalid_argument("not a Prometheus metric name: '" + std::string(name) + "'");
    if (std::find(m_families.begin(), m_families.end(), name) != m_families.end())
        throw std::invalid_argument("metric family written twice: '" + std::string(name) + "'");
    m_families.emplace_back(name);
    m_family = name;
    m_text += "# HELP " + m_family + " " + escape(help, false) + "\n";
    m_text += "# TYPE " + m_family + (type == Type::Counter ? " counter\n" : " gauge\n");
    return *this;
}

PrometheusText &PrometheusText::sample(double value, const Labels &labels)
{
    if (m_family.empty())
        throw std::invalid_argument("a Prometheus sample needs a family first");
    m_text += m_family;
    if (!labels.empty()) {
        m_text += '{';
        for (size_t i = 0; i < labels.size(); ++i) {
            if (!isLabelName(labels[i].first))
                throw std::invalid_argument("not a Prometheus label name: '" + labels[i].first + "'");
            m_text += (i ? "," : "") + labels[i].first + "=\"" + escape(labels[i].second, true) + "\"";
        }
        m_text += '}';
    }
    m_text += " " + formatValue(value) + "\n";
    return *this;
}

PrometheusText &PrometheusText::gauge(std::string_view name, std::string_view help, double value, const Labels &labels)
{
    return family(name, Type::Gauge, help).sample(value, labels);
}

PrometheusText &PrometheusText::counter(std::string_view name, std::string_view help, double value,
                                        const Labels &labels)
{
    return family(name, Type::Counter, help).sample(value, labels);
}

} // namespace rookery
