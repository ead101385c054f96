// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/sim/population.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/common/error.h"

namespace rookery::sim {
namespace {

constexpr double kHour = 3600;
constexpr double kMbit = 1e6 / 8;

double weibullWithMean(std::mt19937_64 &rng, double mean, double shape)
{
    const double scale = mean / std::tgamma(1 + 1 / shape);
    return std::weibull_distribution<double>(shape, scale)(rng);
}

// Sessions over [0, horizon): the state at 0 is drawn from the stationary ON share,
// then ON and OFF periods alternate.
void makeAvailability(std::mt19937_64 &rng, const GeneratorOptions &o, double horizon, Volunteer &v)
{
    const double onMean = o.sessionMeanHours * kHour;
    const double offMean = o.offMeanHours * kHour;
    bool on = std::uniform_real_distribution<double>(0, 1)(rng) < onMean / (onMean + offMean);
    double t = 0;
    // A residual period for the first one: uniform share of a drawn period.
    double first = std::uniform_real_distribution<double>(0, 1)(rng);
    while (t < horizon) {
        double d = on ? weibullWithMean(rng, onMean, o.sessionShape) : weibullWithMean(rng, offMean, o.offShape);
        d *= first;
        first = 1;
        if (on)
            v.sessions.push_back({t, std::min(horizon, t + d)});
        t += d;
        on = !on;
    }
    const double perSecond = o.departuresPerDay / (24 * kHour);
    if (perSecond > 0) {
        const double at = std::exponential_distribution<double>(perSecond)(rng);
        if (at < horizon) {
            v.departsAt = at;
            std::erase_if(v.sessions, [&](const Interval &s) { return s.start >= at; });
            if (!v.sessions.empty())
                v.sessions.back().end = std::min(v.sessions.back().end, at);
        }
    }
    if (o.pausesPerHour <= 0)
        return;
    std::exponential_distribution<double> gap(o.pausesPerHour / kHour);
    std::exponential_distribution<double> length(1 / (o.pauseMeanMinutes * 60));
    for (const auto &s : v.sessions)
        for (double p = s.start + gap(rng); p < s.end; p += gap(rng)) {
            const double end = std::min(s.end, p + length(rng));
            v.pauses.push_back({p, end});
            p = end;
        }
}

std::vector<Interval> intervalsFrom(const nlohmann::json &j, const char *what)
{
    std::vector<Interval> out;
    for (const auto &pair : j) {
        if (!pair.is_array() || pair.size() != 2)
            throw Error(std::string("population: ") + what + " must be [start, end] pairs in hours");
        const Interval i{pair[0].get<double>() * kHour, pair[1].get<double>() * kHour};
        if (!(i.end >= i.start) || (!out.empty() && i.start < out.back().end))
            throw Error(std::string("population: ") + what + " must be ordered and not overlap");
        out.push_back(i);
    }
    return out;
}

nlohmann::json intervalsJson(const std::vector<Interval> &v)
{
    nlohmann::json out = nlohmann::json::array();
    for (const auto &i : v)
        out.push_back({i.start / kHour, i.end / kHour});
    return out;
}

} // namespace

Network defaultNetwork()
{
    Network n;
    n.regions = {"North America", "Europe", "Asia", "South America"};
    n.rttSeconds = {{0.030, 0.090, 0.160, 0.130},
                    {0.090, 0.025, 0.200, 0.200},
                    {0.160, 0.200, 0.040, 0.300},
                    {0.130, 0.200, 0.300, 0.040}};
    return n;
}

Population generatePopulation(const GeneratorOptions &o)
{
    Population p;
    p.network = defaultNetwork();
    const bool oneRegion = o.rttSeconds >= 0;
    if (oneRegion) {
        p.network.regions = {"one region"};
        p.network.rttSeconds = {{o.rttSeconds}};
    }
    std::mt19937_64 rng(o.seed);
    std::lognormal_distribution<double> gflops(std::log(o.gflopsMedian), o.gflopsSigma);
    std::lognormal_distribution<double> memory(std::log(o.memoryMedianBytes), o.memorySigma);
    std::lognormal_distribution<double> down(std::log(o.downMedianBytesPerSecond), o.bandwidthSigma);
    std::lognormal_distribution<double> up(std::log(o.upMedianBytesPerSecond), o.bandwidthSigma);
    // Population shares of the four regions: our assumption.
    std::discrete_distribution<int> region({0.35, 0.35, 0.2, 0.1});
    std::bernoulli_distribution relayed(o.relayedShare);
    p.volunteers.resize(size_t(o.volunteers));
    for (auto &v : p.volunteers) {
        v.gflops = gflops(rng);
        v.memoryBytes = int64_t(memory(rng));
        v.downBytesPerSecond = down(rng);
        v.upBytesPerSecond = std::min(v.downBytesPerSecond, up(rng));
        v.region = region(rng); // drawn either way, so that one region changes nothing else
        if (oneRegion)
            v.region = 0;
        v.relayed = relayed(rng);
        makeAvailability(rng, o, o.hours * kHour, v);
    }
    return p;
}

Population populationFromJson(const std::string &text)
{
    Population p;
    try {
        const auto j = nlohmann::json::parse(text);
        if (j.contains("regions")) {
            p.network.regions = j.at("regions").get<std::vector<std::string>>();
            p.network.rttSeconds.clear();
            for (const auto &row : j.at("rtt_ms")) {
                std::vector<double> r;
                for (const auto &x : row)
                    r.push_back(x.get<double>() / 1000);
                if (r.size() != p.network.regions.size())
                    throw Error("population: rtt_ms must be a square matrix over the regions");
                p.network.rttSeconds.push_back(std::move(r));
            }
            if (p.network.rttSeconds.size() != p.network.regions.size())
                throw Error("population: rtt_ms must be a square matrix over the regions");
        } else {
            p.network = defaultNetwork();
        }
        p.network.relayBytesPerSecond = j.value("relay_mbit", p.network.relayBytesPerSecond / kMbit) * kMbit;
        p.network.relayExtraRttSeconds = j.value("relay_extra_rtt_ms", p.network.relayExtraRttSeconds * 1000) / 1000;
        p.network.transportFlopsPerMessage = j.value("transport_flops_per_message", 0.0);
        p.network.transportFlopsPerByte = j.value("transport_flops_per_byte", 0.0);
        if (!(p.network.transportFlopsPerMessage >= 0) || !(p.network.transportFlopsPerByte >= 0))
            throw Error("population: transport_flops_per_message and transport_flops_per_byte must be 0 or more");
        for (const auto &e : j.at("volunteers")) {
            Volunteer v;
            v.gflops = e.at("gflops").get<double>();
            v.memoryBytes = int64_t(e.at("memory_gib").get<double>() * double(int64_t(1) << 30));
            v.upBytesPerSecond = e.at("up_mbit").get<double>() * kMbit;
            v.downBytesPerSecond = e.at("down_mbit").get<double>() * kMbit;
            v.region = e.value("region", 0);
            v.relayed = e.value("relayed", false);
            v.sessions = e.contains("sessions_h") ? intervalsFrom(e.at("sessions_h"), "sessions_h")
                                                  : std::vector<Interval>{{0, 1e30}};
            if (e.contains("pauses_h"))
                v.pauses = intervalsFrom(e.at("pauses_h"), "pauses_h");
            v.departsAt = e.contains("departs_h") ? e.at("departs_h").get<double>() * kHour : -1;
            if (!(v.gflops > 0) || v.memoryBytes <= 0 || !(v.upBytesPerSecond > 0) || !(v.downBytesPerSecond > 0))
                throw Error("population: volunteer " + std::to_string(p.volunteers.size()) +
                            " needs positive gflops, memory_gib, up_mbit and down_mbit");
            if (v.region < 0 || size_t(v.region) >= p.network.regions.size())
                throw Error("population: volunteer " + std::to_string(p.volunteers.size()) + " names region " +
                            std::to_string(v.region) + ", which does not exist");
            p.volunteers.push_back(std::move(v));
        }
    } catch (const nlohmann::json::exception &e) {
        throw Error(std::string("population: ") + e.what());
    }
    return p;
}

std::string toJson(const Population &p)
{
    nlohmann::json j;
    j["regions"] = p.network.regions;
    auto rtt = nlohmann::json::array();
    for (const auto &row : p.network.rttSeconds) {
        auto r = nlohmann::json::array();
        for (double x : row)
            r.push_back(x * 1000);
        rtt.push_back(r);
    }
    j["rtt_ms"] = rtt;
    j["relay_mbit"] = p.network.relayBytesPerSecond / kMbit;
    j["relay_extra_rtt_ms"] = p.network.relayExtraRttSeconds * 1000;
    j["transport_flops_per_message"] = p.network.transportFlopsPerMessage;
    j["transport_flops_per_byte"] = p.network.transportFlopsPerByte;
    auto vs = nlohmann::json::array();
    for (const auto &v : p.volunteers) {
        nlohmann::json e{{"gflops", v.gflops},
                         {"memory_gib", double(v.memoryBytes) / double(int64_t(1) << 30)},
                         {"up_mbit", v.upBytesPerSecond / kMbit},
                         {"down_mbit", v.downBytesPerSecond / kMbit},
                         {"region", v.region},
                         {"relayed", v.relayed},
                         {"sessions_h", intervalsJson(v.sessions)},
                         {"pauses_h", intervalsJson(v.pauses)}};
        if (v.departsAt >= 0)
            e["departs_h"] = v.departsAt / kHour;
        vs.push_back(std::move(e));
    }
    j["volunteers"] = vs;
    return j.dump(1);
}

Population loadPopulation(const std::string &path)
{
    std::ifstream in(path);
    if (!in)
        throw Error("population: cannot read " + path);
    std::stringstream s;
    s << in.rdbuf();
    return populationFromJson(s.str());
}

} // namespace rookery::sim
