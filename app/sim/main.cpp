// SPDX-License-Identifier: GPL-3.0-or-later
// rookery-sim: the swarm at scale, simulated with the real planner (engine/sim).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "engine/common/command_line.h"
#include "engine/common/error.h"
#include "engine/coord/job_file.h"
#include "engine/model/model_zoo.h"
#include "engine/sim/report.h"
#include "engine/sim/sim_job.h"
#include "engine/sim/simulator.h"
#include "engine/sim/sweep.h"

using namespace rookery;

namespace {

void writeFile(const std::string &path, const std::string &text)
{
    std::ofstream out(path);
    out << text;
    if (!out)
        throw Error("cannot write " + path);
}

// A bar on stderr, redrawn in place; only when stderr is a terminal or asked for.
void drawProgress(double fraction, double hours)
{
    constexpr int kWidth = 40;
    const int filled = int(fraction * kWidth);
    std::fprintf(stderr, "\r[%.*s%*s] %5.1f%%  %.1f of %.1f simulated hours", filled,
                 "########################################", kWidth - filled, "", fraction * 100, fraction * hours,
                 hours);
    std::fflush(stderr);
}

// The sweep mode: every setting on the same population, a table, the recommendation.
int sweep(const sim::Population &population, const sim::SimConfig &config, const sim::SweepAxes &axes, bool quiet,
          const std::string &jsonFile, const std::string &svgPrefix)
{
    const auto started = std::chrono::steady_clock::now();
    const size_t total = axes.clusterSizes.size() * axes.averagingIntervals.size();
    const sim::SweepResult result = sim::runSweep(population, config, axes, [&](double f) {
        if (!quiet)
            drawProgress(f, config.hours * double(total)); // hours of all the settings together
    });
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (!quiet)
        std::fprintf(stderr, "\n");
    std::printf("%-13s %-10s %14s %16s %16s %10s\n", "cluster size", "interval", "samples/s", "B/sample across",
                "B/sample within", "re-plans");
    std::vector<double> values;
    std::vector<std::string> labels;
    for (size_t i = 0; i < result.points.size(); ++i) {
        const auto &p = result.points[i];
        const std::string size = p.clusterSize == 0 ? "auto" : std::to_string(p.clusterSize);
        std::printf("%-13s %-10d %14.1f %16.1f %16.1f %10lld%s\n", size.c_str(), p.averagingInterval,
                    p.samplesPerSecond, p.bytesAcrossPerSample, p.bytesWithinPerSample, (long long)p.replans,
                    i == result.best ? "  <- recommended" : "");
        values.push_back(p.samplesPerSecond);
        labels.push_back(size + "/" + std::to_string(p.averagingInterval));
    }
    const auto &b = result.points[result.best];
    std::printf("recommended: cluster size %s, averaging interval %d (the smallest interval, then size, within %d%% "
                "of the best samples/s; the simulator does not model accuracy)\n",
                b.clusterSize == 0 ? "auto" : std::to_string(b.clusterSize).c_str(), b.averagingInterval,
                int(result.tolerance * 100));
    if (axes.averagingIntervals.size() > 1 &&
        b.averagingInterval == *std::max_element(axes.averagingIntervals.begin(), axes.averagingIntervals.end()))
        std::printf("note: the longest interval swept won; longer ones may do better still (if accuracy allows)\n");
    std::printf("%zu volunteers, %zu settings of %.1f simulated hours in %.1f s wall\n", population.volunteers.size(),
                total, config.hours, wall);
    if (!jsonFile.empty())
        writeFile(jsonFile, sim::sweepJson(result, config, population.volunteers.size(), wall));
    if (!svgPrefix.empty())
        writeFile(svgPrefix + "-sweep.svg",
                  sim::barChartSvg("Samples/s by setting", "cluster size / interval", "samples/s", values, labels));
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    CLI::App app{"Simulates a volunteer swarm with the real planner: compute, links, churn and time; "
                 "it trains nothing.",
                 "rookery-sim"};
    cli::configure(app);
    sim::SimConfig config;
    sim::GeneratorOptions gen;
    std::string populationFile, jsonFile, svgPrefix, savePopulation;
    bool quiet = false;
    double bucketMinutes = 10, upMbit = 20, downMbit = 100;
    app.add_option("--population", populationFile, "read the volunteers from this JSON file")->type_name("FILE");
    cli::addWholeNumber(app, "--volunteers", gen.volunteers, 1, 1'000'000, "N",
                        "generate N volunteers (when no --population)");
    cli::addNumber(app, "--hours", config.hours, 0.001, 24 * 365, "H", "simulated hours");
    cli::addWholeNumber(app, "--seed", config.seed, 0, INT64_MAX, "N", "seed of the generator and the planner");
    auto *modelOption = cli::addChoice(app, "--model", config.model, model::modelNames(), "model to plan for");
    std::string jobFile;
    app.add_option("--job", jobFile,
                   "plan an operator's job file (the coordinator's --job; docs/job-file.md): its model, microbatch, "
                   "optimizer, averaging interval, window cap and seed; --microbatch, --averaging-interval and "
                   "--seed, when given, override it")
        ->type_name("FILE")
        ->excludes(modelOption);
    cli::addWholeNumber(app, "--cluster-size", config.clusterSize, 0, 64, "N",
                        "volunteers per cluster (0: the planner's search decides)");
    cli::addWholeNumber(app, "--averaging-interval", config.averagingInterval, 1, 1'000'000, "STEPS",
                        "optimizer steps between ring averages");
    cli::addWholeNumber(app, "--microbatch", config.microbatch, 1, 65536, "N", "samples per microbatch");
    std::string peerCompression = "bf16";
    cli::addChoice(app, "--peer-compression", peerCompression, {"none", "fp16", "bf16"},
                   "how activations and gradients travel between stages (the nodes' --peer-compression; bf16 is "
                   "their default)");
    std::string ringCompression = "int8";
    cli::addChoice(app, "--ring-compression", ringCompression, {"none", "bf16", "int8", "int4"},
                   "how ring chunks travel (the nodes' --ring-compression; int8 is their default)");
    cli::addWholeNumber(app, "--coordinators", config.coordinators, 1, 10'000, "N",
                        "split the volunteers into N independent swarms, one coordinator each");
    cli::addNumber(app, "--bucket-minutes", bucketMinutes, 0.01, 24 * 60, "MIN", "time-series resolution in minutes");
    cli::addNumber(app, "--gflops-median", gen.gflopsMedian, 0.1, 1e6, "G", "generator: median GFLOP/s");
    cli::addNumber(app, "--up-mbit", upMbit, 0.1, 1e5, "MBIT", "generator: median upload");
    cli::addNumber(app, "--down-mbit", downMbit, 0.1, 1e5, "MBIT", "generator: median download");
    cli::addNumber(app, "--relayed-share", gen.relayedShare, 0, 1, "P", "generator: share of volunteers behind NAT");
    double rttMs = -1;
    cli::addNumber(app, "--rtt-ms", rttMs, 0, 10'000, "MS",
                   "generator: every volunteer in one region with this round trip (a LAN: 1)")
        ->default_str("four regions, 25-300 ms apart");
    cli::addNumber(app, "--session-hours", gen.sessionMeanHours, 0.01, 1e4, "H", "generator: mean session length");
    cli::addNumber(app, "--off-hours", gen.offMeanHours, 0.01, 1e4, "H", "generator: mean time away between sessions");
    cli::addNumber(app, "--pauses-per-hour", gen.pausesPerHour, 0, 1000, "N", "generator: user-activity pauses");
    cli::addNumber(app, "--departures-per-day", gen.departuresPerDay, 0, 1, "P",
                   "generator: share of volunteers leaving for good per day");
    app.add_option("--json", jsonFile, "write the summary here")->type_name("FILE");
    app.add_option("--svg", svgPrefix, "write PREFIX-throughput.svg, -utilisation.svg, -clusters.svg")
        ->type_name("PREFIX");
    app.add_option("--save-population", savePopulation, "write the generated population as JSON")->type_name("FILE");
    std::string sweepSizes, sweepIntervals;
    app.add_option("--sweep-cluster-sizes", sweepSizes,
                   "sweep: simulate each of these cluster sizes (a list like 1,2,4; 0: the planner decides)")
        ->type_name("LIST");
    app.add_option("--sweep-intervals", sweepIntervals,
                   "sweep: simulate each of these averaging intervals, which are also the outer optimizer's H "
                   "(a list like 10,100,500)")
        ->type_name("LIST");
    app.add_flag("--quiet", quiet, "no progress bar");
    app.footer("Example: rookery-sim --volunteers 10000 --hours 24 --cluster-size 4 --coordinators 20 "
               "--json sim.json --svg sim\n"
               "Job: rookery-sim --job resources/jobs/mlp.json --volunteers 1000 --hours 4\n"
               "Sweep: rookery-sim --volunteers 500 --hours 2 --sweep-cluster-sizes 1,2,4 --sweep-intervals "
               "10,100,500 --json sweep.json --svg sweep (every pair on the same population; prints the "
               "recommended setting)");
    try {
        if (cli::parse(app, argc, argv) != cli::Outcome::Run)
            return 0;
        if (!jobFile.empty()) {
            const sim::SimConfig given = config;
            for (const auto &note : sim::applyJob(config, coord::readJobFile(jobFile).run))
                std::fprintf(stderr, "rookery-sim: note: %s\n", note.c_str());
            if (app.count("--microbatch") > 0)
                config.microbatch = given.microbatch;
            if (app.count("--averaging-interval") > 0)
                config.averagingInterval = given.averagingInterval;
            if (app.count("--seed") > 0)
                config.seed = given.seed;
        }
        // The options above take Mbit/s, ms and minutes; the engine takes bytes and seconds.
        gen.upMedianBytesPerSecond = upMbit * 1e6 / 8;
        gen.downMedianBytesPerSecond = downMbit * 1e6 / 8;
        gen.rttSeconds = rttMs < 0 ? -1 : rttMs / 1000;
        config.bucketSeconds = bucketMinutes * 60;
        config.ringPrecision = precisionFromName(ringCompression);
        config.peerCompression = net::compressionFromName(peerCompression);
        gen.hours = config.hours;
        gen.seed = config.seed;
        sim::Population population =
            populationFile.empty() ? sim::generatePopulation(gen) : sim::loadPopulation(populationFile);
        if (!savePopulation.empty())
            writeFile(savePopulation, sim::toJson(population));
        const size_t volunteers = population.volunteers.size();
        const auto started = std::chrono::steady_clock::now();
        if (!sweepSizes.empty() || !sweepIntervals.empty())
            return sweep(population, config,
                         {sweepSizes.empty() ? std::vector<int>{config.clusterSize}
                                             : sim::parseIntList(sweepSizes, "--sweep-cluster-sizes", 0, 64),
                          sweepIntervals.empty()
                              ? std::vector<int>{config.averagingInterval}
                              : sim::parseIntList(sweepIntervals, "--sweep-intervals", 1, 1'000'000)},
                         quiet, jsonFile, svgPrefix);
        sim::Simulator simulator(std::move(population), config);
        const sim::SimResult result =
            simulator.run(quiet ? std::function<void(double)>{} : [&](double f) { drawProgress(f, config.hours); });
        const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        if (!quiet)
            std::fprintf(stderr, "\n");
        const std::string summary = sim::summaryJson(result, simulator.config(), volunteers, wall);
        if (!jsonFile.empty())
            writeFile(jsonFile, summary);
        if (!svgPrefix.empty()) {
            writeFile(svgPrefix + "-throughput.svg", sim::throughputSvg(result));
            writeFile(svgPrefix + "-utilisation.svg", sim::utilisationSvg(result));
            writeFile(svgPrefix + "-clusters.svg", sim::clusterBalanceSvg(result));
        }
        std::printf("volunteers %zu, %.1f simulated hours in %.1f s wall\n", volunteers, config.hours, wall);
        std::printf("samples %.4g (%.1f/s mean), re-plans %lld, layers moved %lld, samples lost in flight %.4g\n",
                    result.samples, result.samples / result.simulatedSeconds, (long long)result.replans,
                    (long long)result.layersMoved, result.samplesLostInFlight);
        std::printf("coordinator %.1f messages/s, planner %.2f s wall (worst round %.3f s)\n",
                    result.coordinatorMessages / result.simulatedSeconds, result.plannerWallSeconds,
                    result.plannerWorstRoundSeconds);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "rookery-sim: %s\n", e.what());
        return 2;
    }
    return 0;
}
