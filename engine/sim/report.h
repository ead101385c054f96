// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>
#include <vector>

#include "engine/sim/simulator.h"

namespace rookery::sim {

/// The run's summary as JSON: totals, rates per sample, churn, the coordinator's load
/// and the time series.
std::string summaryJson(const SimResult &result, const SimConfig &config, size_t volunteers, double wallSeconds);

/// Plots as standalone SVG documents, drawn by hand (polylines and bars).
std::string throughputSvg(const SimResult &result);
std::string utilisationSvg(const SimResult &result);
std::string clusterBalanceSvg(const SimResult &result);

/// A bar chart: `values` in order, one bar each. Exposed for tests.
std::string barChartSvg(const std::string &title, const std::string &xLabel, const std::string &yLabel,
                        const std::vector<double> &values, const std::vector<std::string> &labels);

} // namespace rookery::sim
