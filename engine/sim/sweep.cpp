// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/sim/sweep.h"

#include <algorithm>
#include <charconv>

#include <nlohmann/json.hpp>

#include "engine/common/error.h"

namespace rookery::sim {

size_t recommend(const std::vector<SweepPoint> &points, double tolerance)
{
    if (points.empty())
        throw Error("sweep: no settings to recommend from");
    double top = 0;
    for (const auto &p : points)
        top = std::max(top, p.samplesPerSecond);
    size_t best = points.size();
    for (size_t i = 0; i < points.size(); ++i) {
        const auto &p = points[i];
        if (p.samplesPerSecond < (1 - tolerance) * top)
            continue;
        if (best == points.size() || p.averagingInterval < points[best].averagingInterval ||
            (p.averagingInterval == points[best].averagingInterval && p.clusterSize < points[best].clusterSize))
            best = i;
    }
    return best;
}

SweepResult runSweep(const Population &population, const SimConfig &base, const SweepAxes &axes,
                     const std::function<void(double)> &progress)
{
    if (axes.clusterSizes.empty() || axes.averagingIntervals.empty())
        throw Error("sweep: give at least one cluster size and one averaging interval");
    for (int s : axes.clusterSizes)
        if (s < 0)
            throw Error("sweep: cluster size " + std::to_string(s) + " is negative");
    for (int h : axes.averagingIntervals)
        if (h < 1)
            throw Error("sweep: averaging interval " + std::to_string(h) + " is below 1");
    SweepResult out;
    const size_t total = axes.clusterSizes.size() * axes.averagingIntervals.size();
    for (int size : axes.clusterSizes)
        for (int interval : axes.averagingIntervals) {
            SimConfig c = base;
            c.clusterSize = size;
            c.averagingInterval = interval;
            const size_t done = out.points.size();
            Simulator simulator(population, c);
            const SimResult r = simulator.run([&](double f) {
                if (progress)
                    progress((double(done) + f) / double(total));
            });
            const double samples = std::max(r.samples, 1.0);
            std::vector<double> u = r.utilisation;
            std::sort(u.begin(), u.end());
            out.points.push_back({size, interval, r.samples / std::max(r.simulatedSeconds, 1.0),
                                  r.bytesAcrossClusters / samples, r.bytesWithinClusters / samples,
                                  r.stalledClusterSeconds, u.empty() ? 0 : u[u.size() / 2], r.replans});
        }
    if (progress)
        progress(1);
    out.best = recommend(out.points, out.tolerance);
    return out;
}

std::string sweepJson(const SweepResult &result, const SimConfig &base, size_t volunteers, double wallSeconds)
{
    nlohmann::json j;
    j["config"] = {{"volunteers", volunteers},      {"hours", base.hours}, {"model", base.model},
                   {"microbatch", base.microbatch}, {"seed", base.seed},   {"coordinators", base.coordinators}};
    nlohmann::json points = nlohmann::json::array();
    for (const auto &p : result.points)
        points.push_back({{"cluster_size", p.clusterSize},
                          {"averaging_interval", p.averagingInterval},
                          {"samples_per_second", p.samplesPerSecond},
                          {"bytes_per_sample_across_clusters", p.bytesAcrossPerSample},
                          {"bytes_per_sample_within_clusters", p.bytesWithinPerSample},
                          {"stalled_cluster_seconds", p.stalledClusterSeconds},
                          {"utilisation_median", p.utilisationMedian},
                          {"replans", p.replans}});
    j["points"] = points;
    const auto &b = result.points.at(result.best);
    j["recommended"] = {{"cluster_size", b.clusterSize},
                        {"averaging_interval", b.averagingInterval},
                        {"samples_per_second", b.samplesPerSecond},
                        {"rule", "the smallest averaging interval, then cluster size, within " +
                                     std::to_string(int(result.tolerance * 100)) +
                                     "% of the highest samples/s (the simulator does not model accuracy)"}};
    j["wall_seconds"] = wallSeconds;
    return j.dump(2) + "\n";
}

std::vector<int> parseIntList(const std::string &text, const std::string &what, int low, int high)
{
    std::vector<int> out;
    size_t start = 0;
    for (;;) {
        const size_t comma = text.find(',', start);
        const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        int v = 0;
        const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
        if (item.empty() || ec != std::errc() || end != item.data() + item.size())
            throw Error(what + ": '" + item + "' is not a whole number (expected a list like 1,2,4)");
        if (v < low || v > high)
            throw Error(what + ": " + std::to_string(v) + " is outside " + std::to_string(low) + "-" +
                        std::to_string(high));
        out.push_back(v);
        if (comma == std::string::npos)
            break;
        start = comma + 1;
    }
    return out;
}

} // namespace rookery::sim
