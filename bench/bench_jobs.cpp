// SPDX-License-Identifier: GPL-3.0-or-later
// bench_jobs: the reference jobs of resources/jobs (issue 18), each
//   - trained in one process (the unsplit Trainer, one torch thread);
//   - cut by the partitioner into 2 stages and run as the in-process asynchronous
//     pipeline (one thread per stage), so that the partitioner's predicted stage times
//     can be held against the stages' measured busy time per microbatch;
//   - trained by a real swarm on loopback: a coordinator started with --job FILE and
//     node processes (--max-cores 1) over TLS.
// The residual CNN's swarm is the 2-stage pipeline. For the vision transformer, the
// planner is asked whether one volunteer with 256 MiB for training can hold it (it
// cannot: the bench fails if it could), a real coordinator with one node capped so is
// watched until the node says it waits, and then a swarm of as many node processes as
// the planner needs with what that node offered, one stage each and capped alike,
// trains it while their peak resident memory is sampled. Predicted stage times use the
// GFLOP/s of training that the one-process run measured, so they test how the cost
// model divides a model, not the probe's speed.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <thread>

#include <unistd.h>

#include "bench/support/bench_report.h"
#include "bench/support/swarm_bench_run.h"
#include "engine/common/error.h"
#include "engine/common/format.h"
#include "engine/common/paths.h"
#include "engine/coord/job_file.h"
#include "engine/data/image_dataset.h"
#include "engine/device/compute_threads.h"
#include "engine/launcher/swarm_launcher.h"
#include "engine/model/partitioner.h"
#include "engine/train/optimizer_config.h"
#include "engine/train/pipeline.h"
#include "engine/train/trainer.h"

using namespace rookery;
using Clock = std::chrono::steady_clock;

namespace {

// What each volunteer gives the vision transformer, as the issue sets it.
constexpr int64_t kCapMiB = 256;
// A node's --memory-cap caps the whole process, which holds about 220 MiB before any
// model (the program, LibTorch, the dataset) and keeps 64 MiB for what training takes
// beside the planned memory (device::kTrainingAllowanceBytes); this leaves it about
// 256 MiB to offer for training (the node prints what it offers, and the bench plans
// with that figure).
constexpr int64_t kNodeCapMiB = 544;

double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The largest resident memory (VmRSS) of every rookery-node process whose command line
// names `work`, sampled twice a second once training() is set: a node's start measures
// its machine with buffers of 512 MiB, which is not what training holds.
class NodeMemorySampler
{
public:
    explicit NodeMemorySampler(std::filesystem::path work)
        : m_work(std::move(work))
        , m_thread([this] {
            while (!m_stop) {
                if (m_training)
                    sample();
                std::this_thread::sleep_for(std::chrono::milliseconds(500));
            }
        })
    { }
    ~NodeMemorySampler()
    {
        m_stop = true;
        m_thread.join();
    }
    void training() { m_training = true; }
    /// By node name (its --name, "node-3"), the largest resident memory seen.
    std::map<std::string, uint64_t> peaks() const
    {
        std::lock_guard lock(m_mutex);
        return m_peak;
    }

private:
    void sample()
    {
        std::error_code ec;
        for (const auto &entry : std::filesystem::directory_iterator("/proc", ec)) {
            const std::string pid = entry.path().filename().string();
            if (pid.find_first_not_of("0123456789") != std::string::npos)
                continue;
            std::ifstream cmdline(entry.path() / "cmdline", std::ios::binary);
            const std::string args((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
            if (args.find("rookery-node") == std::string::npos || args.find(m_work.string()) == std::string::npos)
                continue;
            const std::string nameFlag = std::string("--name") + '\0';
            const size_t at = args.find(nameFlag);
            const std::string name =
                at == std::string::npos ? pid : args.substr(at + nameFlag.size()).c_str(); // up to its NUL
            std::ifstream status(entry.path() / "status");
            for (std::string line; std::getline(status, line);)
                if (line.rfind("VmRSS:", 0) == 0) {
                    const uint64_t kib = std::strtoull(line.c_str() + 6, nullptr, 10);
                    std::lock_guard lock(m_mutex);
                    m_peak[name] = std::max(m_peak[name], kib << 10);
                }
        }
    }

    std::filesystem::path m_work;
    std::atomic<bool> m_stop{false}, m_training{false};
    mutable std::mutex m_mutex;
    std::map<std::string, uint64_t> m_peak;
    std::thread m_thread;
};

double oneProcessSamplesPerSecond(const coord::Job &job, const std::shared_ptr<const data::ImageDataset> &train,
                                  int steps)
{
    train::TrainerConfig c;
    c.model = job.run.model;
    c.optimizer = job.run.optimizer;
    c.batchSize = job.run.microbatch;
    c.seed = uint64_t(job.run.seed);
    train::Trainer t(c, train);
    t.step(); // one-off allocations
    const auto start = Clock::now();
    double firstLoss = 0, lastLoss = 0;
    for (int i = 0; i < steps; ++i) {
        const double loss = t.step().loss;
        (i == 0 ? firstLoss : lastLoss) = loss;
    }
    const double rate = double(steps) * double(c.batchSize) / secondsSince(start);
    std::printf("  one process: %.1f samples/s (loss %.3f -> %.3f over %d steps)\n", rate, firstLoss, lastLoss, steps);
    return rate;
}

// What a capped node said about its offer and its place, and the bytes it offered
// (0 when it printed no offer).
struct CappedVolunteerSaid
{
    std::string said;
    uint64_t offeredBytes = 0;
};

// "... so 260.4 MiB is offered for training": the bytes.
uint64_t offeredBytesIn(const std::string &line)
{
    static const std::regex offer(R"(so ([0-9.]+) (B|KiB|MiB|GiB) is offered for training)");
    std::smatch m;
    if (!std::regex_search(line, m, offer))
        return 0;
    const int shift = m[2] == "GiB" ? 30 : m[2] == "MiB" ? 20 : m[2] == "KiB" ? 10 : 0;
    return uint64_t(std::stod(m[1].str()) * double(uint64_t(1) << shift));
}

// The watcher of a coordinator with one capped volunteer: what it says about planning.
CappedVolunteerSaid whyOneCappedVolunteerIsNotPlanned(const std::filesystem::path &jobFile,
                                                      const std::filesystem::path &work, int64_t capMiB,
                                                      std::chrono::seconds patience)
{
    launcher::SwarmLauncherSettings s;
    s.nodes = 1;
    s.clusterSize = 0;
    s.workDir = work;
    s.datasetDir = defaultFashionMnistDir();
    s.coordinatorArgs = {"--job", jobFile.string(), "--steps", "10"};
    s.nodeArgs = {"--max-cores", "1", "--memory-cap", std::to_string(capMiB)};
    s.restartCrashed = false;
    s.binDir = bench::benchProgramDirectory();
    std::string said, trained;
    uint64_t offered = 0;
    bool done = false;
    launcher::SwarmLauncher swarm(s, [&](const std::string &who, const std::string &line) {
        if (who != "coordinator" && (line.find("is offered for training") != std::string::npos ||
                                     line.find("cannot hold the model") != std::string::npos))
            said += (said.empty() ? "" : "; ") + line;
        if (who != "coordinator" && offered == 0)
            offered = offeredBytesIn(line);
        if (said.find("cannot hold the model") != std::string::npos)
            done = true;
        if (trained.empty() && line.rfind("step ", 0) == 0 && who != "coordinator")
            trained = line;
    });
    swarm.start();
    const auto deadline = Clock::now() + patience;
    while (!done && trained.empty() && Clock::now() < deadline && swarm.poll(std::chrono::milliseconds(200))) { }
    swarm.stop();
    if (!trained.empty())
        throw Error("one volunteer capped at " + std::to_string(kCapMiB) + " MiB trained the whole model: " + trained);
    return {said, offered};
}

void benchJob(const std::string &file, const std::filesystem::path &jobsDir, const bench::BenchOptions &opts,
              const std::shared_ptr<const data::ImageDataset> &train, bench::BenchReport &report)
{
    const auto job = coord::readJobFile(jobsDir / file);
    const auto &spec = job.run.model;
    const std::string key = spec.name;
    const int64_t microbatch = job.run.microbatch;
    const auto costs = model::layerCosts(spec, microbatch);
    double flopsPerStep = 0;
    for (size_t i = 0; i < costs.size(); ++i)
        flopsPerStep += model::trainingFlops(costs, i);
    const int64_t parameters = model::parameterCount(spec);
    std::printf("\n%s (%s): %s parameters, %zu layers, microbatch %lld, %.2f GFLOP per sample to train\n",
                job.name.c_str(), file.c_str(), format::count(parameters).c_str(), spec.layers.size(),
                (long long)microbatch, flopsPerStep / double(microbatch) / 1e9);
    report.add(key + "_parameters", double(parameters));
    report.add(key + "_train_gflop_per_sample", flopsPerStep / double(microbatch) / 1e9);

    // One process, one thread: the baseline, and the speed the predictions use.
    const bool vit = spec.name == "vit";
    const int steps = opts.quick ? (vit ? 6 : 10) : (vit ? 30 : 60);
    device::applyThreadConfig({1, 1});
    const double one = oneProcessSamplesPerSecond(job, train, steps);
    report.add(key + "_one_process_samples_per_s", one);
    const double gflops = one * flopsPerStep / double(microbatch) / 1e9;

    // The partitioner's cut for two equal volunteers, and its times at that speed.
    const auto options = model::partitionOptionsFor(spec, microbatch, train::stateCopies(job.run.optimizer));
    const std::vector<model::StageDevice> two(2, model::StageDevice{"core", gflops, uint64_t(1) << 36});
    const auto plan = model::partitionLayers(costs, two, options);
    std::printf("  one core trains at %.1f GFLOP/s; partitioner, 2 stages: %s\n", gflops, plan.describe().c_str());

    train::PipelineConfig pc;
    pc.model = spec;
    pc.cuts = plan.cuts();
    pc.optimizer = job.run.optimizer;
    pc.microbatchSize = microbatch;
    pc.seed = uint64_t(job.run.seed);
    train::Pipeline pipeline(pc, train);
    (void)pipeline.run(2); // warm
    const auto r = pipeline.run(steps);
    if (!r.finished)
        throw Error("the in-process pipeline of " + key + " did not finish: " + r.stop.reason);
    std::printf("  in-process 2-stage pipeline: %.1f samples/s (%.2fx one process)\n", r.samplesPerSecond,
                r.samplesPerSecond / one);
    report.add(key + "_inprocess_pipeline_samples_per_s", r.samplesPerSecond);
    double worstStageError = 0;
    for (size_t s = 0; s < plan.stages.size() && s < r.stages.size(); ++s) {
        const double predicted = plan.stages[s].computeSeconds;
        const double measured = r.stages[s].secondsPerMicrobatch();
        const double error = (predicted - measured) / measured;
        worstStageError = std::max(worstStageError, std::abs(error));
        std::printf("  stage %zu [%zu,%zu): predicted %.1f ms, measured %.1f ms (%+.0f%%)\n", s,
                    plan.stages[s].firstLayer, plan.stages[s].lastLayer, predicted * 1e3, measured * 1e3, error * 100);
        report.add(key + "_stage" + std::to_string(s) + "_predicted_ms", predicted * 1e3);
        report.add(key + "_stage" + std::to_string(s) + "_measured_ms", measured * 1e3);
    }
    report.add(key + "_worst_stage_time_error", worstStageError);

    // The real swarm on loopback.
    const auto work = std::filesystem::temp_directory_path() / ("rookery-bench-jobs-" + std::to_string(getpid()));
    std::filesystem::remove_all(work);
    bench::SwarmBenchSpec swarm;
    swarm.jobFile = jobsDir / file;
    swarm.microbatch = microbatch;
    swarm.rateMbit = 0; // loopback as it is
    swarm.averagingInterval = 1000000;
    swarm.compression = "bf16";
    if (vit) {
        // One volunteer with 256 MiB for training cannot hold it: the planner says so,
        // and so does a real coordinator with one such volunteer.
        const std::vector<model::StageDevice> capped(
            1, {"a volunteer capped at 256 MiB", gflops, uint64_t(kCapMiB) << 20});
        std::string why = "it fits";
        try {
            (void)model::partitionLayers(costs, capped, options);
        } catch (const Error &e) {
            why = e.what();
        }
        if (why == "it fits")
            throw Error("one volunteer capped at 256 MiB could hold " + key + "; the bench expects it not to");
        std::printf("  one volunteer with %lld MiB for training, the planner: %s\n", (long long)kCapMiB, why.c_str());
        const auto said =
            whyOneCappedVolunteerIsNotPlanned(jobsDir / file, work, kNodeCapMiB, std::chrono::seconds(90));
        std::filesystem::remove_all(work);
        std::printf("  a real coordinator and one node at --memory-cap %lld: %s\n", (long long)kNodeCapMiB,
                    said.said.empty() ? "(the node said nothing about its place in 90 s, and trained nothing)"
                                      : said.said.c_str());
        report.add(key + "_one_capped_volunteer_holds_it", 0.0);
        // The swarm: as many volunteers as the planner needs to hold it with what such a
        // node really offers (its cap less what it holds and keeps aside), one stage
        // each, every one capped as the one above. A node whose resident memory crosses
        // its cap stops (its governor), and the bench then fails: the run completing is
        // the proof that they held it; the peaks below say by how much.
        const uint64_t offer = said.offeredBytes > 0 ? said.offeredBytes : uint64_t(kCapMiB) << 20;
        report.add(key + "_capped_volunteer_offer_mib", double(offer) / double(1 << 20));
        int needed = 0;
        for (int k = 2; k <= 10 && needed == 0; ++k) {
            const std::vector<model::StageDevice> volunteers(size_t(k), {"capped volunteer", gflops, offer});
            try {
                const auto cut = model::partitionLayers(costs, volunteers, options);
                needed = k;
                std::printf("  the planner needs %d volunteers offering %s each: %s\n", k,
                            format::bytes(double(offer)).c_str(), cut.describe().c_str());
            } catch (const Error &) { }
        }
        if (needed == 0)
            throw Error("no swarm of up to 10 volunteers capped at 256 MiB can hold " + key);
        report.add(key + "_capped_volunteers_needed", double(needed));
        swarm.nodes = swarm.clusterSize = needed;
        for (int n = 1; n <= needed; ++n)
            swarm.nodeExtraArgs[n] = {"--eval-samples", "200", "--memory-cap", std::to_string(kNodeCapMiB)};
    } else {
        swarm.nodes = swarm.clusterSize = 2;
        for (int n = 1; n <= 2; ++n)
            swarm.nodeExtraArgs[n] = {"--eval-samples", "2000"};
    }
    const int64_t swarmSteps = opts.quick ? (vit ? 10 : 20) : (vit ? 150 : 120);
    bench::SwarmBenchOutcome o;
    std::map<std::string, uint64_t> peaks;
    std::map<std::string, std::string> layers; // by node name, from its assignment
    {
        NodeMemorySampler sampler(work);
        const std::regex assigned(R"(assignment: training: .*(layers \[\d+,\d+\)))");
        swarm.onLine = [&](const std::string &who, const std::string &line) {
            if (line.rfind("step ", 0) == 0)
                sampler.training();
            std::smatch m;
            if (std::regex_search(line, m, assigned)) { // "node 3" prints for the process named "node-3"
                std::string name = who;
                std::replace(name.begin(), name.end(), ' ', '-');
                layers.emplace(name, m[1].str()); // its first plan: a stage that finished keeps it
            }
        };
        o = bench::runSwarmBench(swarm, swarmSteps, 0, work);
        peaks = sampler.peaks();
    }
    std::filesystem::remove_all(work);
    uint64_t largest = 0;
    std::string peakText;
    for (const auto &[name, bytes] : peaks) {
        peakText += (peakText.empty() ? "" : ", ") + name + " (" + layers[name] + ") " + format::bytes(double(bytes));
        largest = std::max(largest, bytes);
    }
    if (!peaks.empty()) {
        std::printf("  largest resident memory of each node process while training: %s\n", peakText.c_str());
        report.add(key + "_swarm_peak_node_rss_mib", double(largest) / double(1 << 20));
        if (vit)
            std::printf("  the largest is %s the nodes' cap of %lld MiB\n",
                        largest <= uint64_t(kNodeCapMiB) << 20 ? "within" : "OVER", (long long)kNodeCapMiB);
    }
    std::printf("  swarm of %d node processes on loopback: %.1f samples/s (%.2fx one process); loss %.3f -> %.3f; "
                "final test accuracy %s\n",
                swarm.nodes, o.samplesPerSecond, o.samplesPerSecond / one, o.firstLoss, o.lastLoss,
                o.finalAccuracy >= 0 ? format::percent(o.finalAccuracy).c_str() : "not reported");
    report.add(key + "_swarm_nodes", double(swarm.nodes));
    report.add(key + "_swarm_samples_per_s", o.samplesPerSecond);
    report.add(key + "_swarm_vs_one_process", o.samplesPerSecond / one);
    report.add(key + "_swarm_first_loss", o.firstLoss);
    report.add(key + "_swarm_last_loss", o.lastLoss);
    if (o.finalAccuracy >= 0)
        report.add(key + "_swarm_final_accuracy", o.finalAccuracy);
}

} // namespace

int main(int argc, char **argv)
{
    const auto opts = bench::parseBenchOptions(
        argc, argv, "bench_jobs",
        "The reference jobs (residual CNN, vision transformer) in one process, as a 2-stage pipeline, and as a swarm "
        "on loopback; the partitioner's stage times against measured ones; the transformer on volunteers capped at "
        "256 MiB.");
    std::setvbuf(stdout, nullptr, _IOLBF, 0); // progress as it comes, also into a file
    try {
        bench::BenchReport report("bench_jobs", opts.quick);
        const std::filesystem::path jobsDir =
            std::getenv("ROOKERY_JOBS_DIR") ? std::getenv("ROOKERY_JOBS_DIR") : ROOKERY_JOBS_DIR;
        auto train = std::make_shared<const data::ImageDataset>(
            data::loadFashionMnist(defaultFashionMnistDir(), data::Split::Train));
        std::printf("%u cores; jobs from %s\n", std::max(1u, std::thread::hardware_concurrency()), jobsDir.c_str());
        benchJob("rescnn.json", jobsDir, opts, train, report);
        benchJob("vit.json", jobsDir, opts, train, report);
        report.finish(opts.jsonPath);
        return 0;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "bench_jobs: %s\n", e.what());
        return 1;
    }
}
