// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/sim/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <sstream>

#include <nlohmann/json.hpp>

namespace rookery::sim {
namespace {

constexpr double kWidth = 720, kHeight = 360, kLeft = 70, kRight = 20, kTop = 40, kBottom = 50;

std::string num(double x)
{
    char b[32];
    std::snprintf(b, sizeof b, "%.4g", x);
    return b;
}

// Numbers as an axis shows them: 32k, 1.5M, 0.25.
std::string label(double x)
{
    char b[32];
    const double a = std::abs(x);
    if (a >= 1e6)
        std::snprintf(b, sizeof b, "%.3gM", x / 1e6);
    else if (a >= 1e4)
        std::snprintf(b, sizeof b, "%.3gk", x / 1e3);
    else
        std::snprintf(b, sizeof b, "%.4g", x);
    return b;
}

std::string escape(const std::string &s)
{
    std::string out;
    for (char c : s)
        out += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : std::string(1, c);
    return out;
}

// The frame, the title, axis labels and ticks for x in [0, xMax], y in [0, yMax].
void frame(std::ostringstream &o, const std::string &title, const std::string &xLabel, const std::string &yLabel,
           double xMax, double yMax, bool xTicks)
{
    o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << kHeight
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
    o << "<text x=\"" << kWidth / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">" << escape(title)
      << "</text>\n";
    const double x0 = kLeft, y0 = kHeight - kBottom, x1 = kWidth - kRight, y1 = kTop;
    o << "<path d=\"M" << x0 << ' ' << y1 << " V" << y0 << " H" << x1 << "\" stroke=\"black\" fill=\"none\"/>\n";
    for (int i = 0; i <= 4; ++i) {
        const double y = y0 - (y0 - y1) * i / 4;
        o << "<line x1=\"" << x0 << "\" y1=\"" << y << "\" x2=\"" << x1 << "\" y2=\"" << y
          << "\" stroke=\"#ddd\"/><text x=\"" << x0 - 6 << "\" y=\"" << y + 4 << "\" text-anchor=\"end\">"
          << label(yMax * i / 4) << "</text>\n";
        if (xTicks) {
            const double x = x0 + (x1 - x0) * i / 4;
            o << "<text x=\"" << x << "\" y=\"" << y0 + 16 << "\" text-anchor=\"middle\">" << label(xMax * i / 4)
              << "</text>\n";
        }
    }
    o << "<text x=\"" << (x0 + x1) / 2 << "\" y=\"" << kHeight - 10 << "\" text-anchor=\"middle\">" << escape(xLabel)
      << "</text>\n";
    o << "<text x=\"16\" y=\"" << (y0 + y1) / 2 << "\" text-anchor=\"middle\" transform=\"rotate(-90 16 "
      << (y0 + y1) / 2 << ")\">" << escape(yLabel) << "</text>\n";
}

// The axis' top: four ticks of a round step (1, 2, 2.5 or 5 times a power of ten).
double niceMax(double x)
{
    if (!(x > 0))
        return 1;
    const double raw = x / 4, power = std::pow(10, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
        if (m * power >= raw)
            return 4 * m * power;
    return 40 * power;
}

} // namespace

std::string summaryJson(const SimResult &r, const SimConfig &c, size_t volunteers, double wallSeconds)
{
    nlohmann::json j;
    j["config"] = {{"volunteers", volunteers},
                   {"hours", c.hours},
                   {"model", c.model},
                   {"microbatch", c.microbatch},
                   {"cluster_size", c.clusterSize},
                   {"averaging_interval", c.averagingInterval},
                   {"max_window", c.maxWindow},
                   {"peer_compression", std::string(net::compressionName(c.peerCompression))},
                   {"seed", c.seed},
                   {"coordinators", c.coordinators},
                   {"heartbeat_s", c.heartbeatSeconds},
                   {"heartbeat_timeout_s", c.heartbeatTimeoutSeconds},
                   {"rejoin_grace_s", c.rejoinGraceSeconds},
                   {"restart_s", c.restartSeconds}};
    const double samples = std::max(r.samples, 1.0);
    std::vector<double> u = r.utilisation;
    std::sort(u.begin(), u.end());
    const double meanU = u.empty() ? 0 : std::accumulate(u.begin(), u.end(), 0.0) / double(u.size());
    j["samples"] = r.samples;
    j["samples_per_second_mean"] = r.samples / std::max(r.simulatedSeconds, 1.0);
    j["utilisation"] = {{"stages", u.size()}, {"mean", meanU}, {"median", u.empty() ? 0 : u[u.size() / 2]}};
    j["bytes_per_sample"] = {{"within_clusters", r.bytesWithinClusters / samples},
                             {"across_clusters", r.bytesAcrossClusters / samples}};
    j["churn"] = {{"replans", r.replans},
                  {"joins", r.joins},
                  {"leaves", r.leaves},
                  {"layers_moved", r.layersMoved},
                  {"bytes_moved", r.bytesMoved},
                  {"samples_lost_in_flight", r.samplesLostInFlight},
                  {"stalled_cluster_seconds", r.stalledClusterSeconds}};
    j["coordinator"] = {{"messages", r.coordinatorMessages},
                        {"messages_per_second", r.coordinatorMessages / std::max(r.simulatedSeconds, 1.0)},
                        {"assignment_pushes", r.assignmentPushes},
                        {"planner_wall_seconds", r.plannerWallSeconds},
                        {"planner_worst_round_seconds", r.plannerWorstRoundSeconds}};
    j["clusters_at_end"] = r.clusters.size();
    j["events"] = r.events;
    j["wall_seconds"] = wallSeconds;
    auto series = nlohmann::json::array();
    for (const auto &p : r.series)
        series.push_back({{"hours", p.hours},
                          {"samples_per_second", p.samplesPerSecond},
                          {"coordinator_messages_per_second", p.coordinatorMessagesPerSecond},
                          {"online", p.online},
                          {"training", p.training},
                          {"clusters", p.clusters},
                          {"replans", p.replans}});
    j["series"] = series;
    return j.dump(1);
}

std::string throughputSvg(const SimResult &r)
{
    double yMax = 0;
    for (const auto &p : r.series)
        yMax = std::max(yMax, p.samplesPerSecond);
    yMax = niceMax(yMax);
    const double xMax = std::max(r.simulatedSeconds / 3600, 1e-9);
    std::ostringstream o;
    frame(o, "Swarm throughput", "simulated hours", "samples/s", xMax, yMax, true);
    o << "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1.5\" points=\"";
    for (const auto &p : r.series) {
        const double x = kLeft + (kWidth - kLeft - kRight) * p.hours / xMax;
        const double y = (kHeight - kBottom) - (kHeight - kBottom - kTop) * p.samplesPerSecond / yMax;
        o << num(x) << ',' << num(y) << ' ';
    }
    o << "\"/>\n</svg>\n";
    return o.str();
}

std::string barChartSvg(const std::string &title, const std::string &xLabel, const std::string &yLabel,
                        const std::vector<double> &values, const std::vector<std::string> &labels)
{
    const double yMax = niceMax(values.empty() ? 0 : *std::max_element(values.begin(), values.end()));
    std::ostringstream o;
    frame(o, title, xLabel, yLabel, 1, yMax, false);
    const double plotW = kWidth - kLeft - kRight, plotH = kHeight - kBottom - kTop;
    const double w = values.empty() ? 0 : plotW / double(values.size());
    const size_t every = std::max<size_t>(1, labels.size() / 10);
    for (size_t i = 0; i < values.size(); ++i) {
        const double h = plotH * values[i] / yMax;
        o << "<rect x=\"" << num(kLeft + w * double(i)) << "\" y=\"" << num(kTop + plotH - h) << "\" width=\""
          << num(std::max(w * 0.9, 0.5)) << "\" height=\"" << num(h) << "\" fill=\"#4c72b0\"/>\n";
        if (i < labels.size() && i % every == 0)
            o << "<text x=\"" << num(kLeft + w * (double(i) + 0.5)) << "\" y=\"" << kHeight - kBottom + 16
              << "\" text-anchor=\"middle\">" << escape(labels[i]) << "</text>\n";
    }
    o << "</svg>\n";
    return o.str();
}

std::string utilisationSvg(const SimResult &r)
{
    constexpr int kBins = 20;
    std::vector<double> counts(kBins, 0);
    std::vector<std::string> labels;
    for (double u : r.utilisation)
        counts[size_t(std::clamp(int(u * kBins), 0, kBins - 1))] += 1;
    for (int i = 0; i < kBins; ++i)
        labels.push_back(num(100.0 * i / kBins) + "%");
    return barChartSvg("Stage utilisation (compute busy / time holding a stage)", "utilisation", "stages", counts,
                       labels);
}

std::string clusterBalanceSvg(const SimResult &r)
{
    std::vector<double> speeds;
    for (const auto &c : r.clusters)
        speeds.push_back(c.samplesPerSecond);
    std::sort(speeds.begin(), speeds.end(), std::greater<>());
    // At most 200 bars: with more clusters, every k-th of the sorted speeds (a quantile plot).
    const size_t step = std::max<size_t>(1, (speeds.size() + 199) / 200);
    std::vector<double> shown;
    std::vector<std::string> labels;
    for (size_t i = 0; i < speeds.size(); i += step) {
        shown.push_back(speeds[i]);
        labels.push_back(std::to_string(i + 1));
    }
    speeds = std::move(shown);
    return barChartSvg("Cluster balance at the end (fastest first)", "cluster rank", "samples/s when running", speeds,
                       labels);
}

} // namespace rookery::sim
