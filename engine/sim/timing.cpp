// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/sim/timing.h"

#include <algorithm>
#include <numeric>

#include "engine/common/error.h"
#include "engine/train/pipeline_window.h"

namespace rookery::sim {

double pipelineMicrobatchesPerSecond(const std::vector<double> &stageSeconds, double linkRttSeconds, int window)
{
    if (stageSeconds.empty())
        return 0;
    const double slowest = *std::max_element(stageSeconds.begin(), stageSeconds.end());
    const double roundTrip = std::accumulate(stageSeconds.begin(), stageSeconds.end(), 0.0) + linkRttSeconds;
    if (!(slowest > 0) || !(roundTrip > 0))
        return 0;
    return std::min(1 / slowest, double(std::max(1, window)) / roundTrip);
}

double ringBytesPerMember(int members, double bytes) { return members < 2 ? 0 : 2.0 * (members - 1) / members * bytes; }

double transportSeconds(const Network &network, double messages, double bytes, double gflops)
{
    const double work = messages * network.transportFlopsPerMessage + bytes * network.transportFlopsPerByte;
    if (work <= 0)
        return 0;
    if (!(gflops > 0))
        throw Error("sim: the transport's cost needs a positive GFLOP/s");
    return work / (gflops * 1e9);
}

double ringTransportSeconds(const Network &network, int members, double bytes, double gflops)
{
    if (members < 2)
        return 0;
    return transportSeconds(network, 4.0 * (members - 1), 2 * ringBytesPerMember(members, bytes), gflops);
}

double ringAllReduceSeconds(int members, double bytes, double bytesPerSecond, double rttSeconds)
{
    if (members < 2)
        return 0;
    if (!(bytesPerSecond > 0))
        throw Error("sim: a ring needs a positive bandwidth");
    const double steps = 2.0 * (members - 1);
    return steps * (bytes / members / bytesPerSecond + rttSeconds / 2);
}

double linkBytesPerSecond(const Volunteer &from, const Volunteer &to, const Network &network)
{
    double b = std::min(from.upBytesPerSecond, to.downBytesPerSecond);
    if (from.relayed || to.relayed)
        b = std::min(b, network.relayBytesPerSecond);
    return b;
}

double linkRttSeconds(const Volunteer &from, const Volunteer &to, const Network &network)
{
    double rtt = network.rttSeconds.at(size_t(from.region)).at(size_t(to.region));
    if (from.relayed || to.relayed)
        rtt += network.relayExtraRttSeconds;
    return rtt;
}

PipelineTiming timePipeline(const std::vector<model::LayerCost> &costs, const model::PartitionOptions &options,
                            const model::Partition &partition, const std::vector<const Volunteer *> &stages,
                            const Network &network, int maxWindow, double valueBytes)
{
    const size_t n = partition.stages.size();
    if (n != stages.size() || n == 0)
        throw Error("sim: a pipeline needs one volunteer per stage");
    if (!(valueBytes > 0 && valueBytes <= 4))
        throw Error("sim: activations take 1 to 4 bytes a value on the wire");
    // The cost model counts float32 activations; the wire carries `valueBytes` a value.
    const auto wire = [&](size_t layer) { return double(costs[layer].activationBytes) * valueBytes / 4; };
    PipelineTiming t;
    t.window = options.inFlight > 0 ? options.inFlight : int(n) + 1;
    double rtt = 0, overlapped = 0; // overlapped: uploads hidden behind compute, still on the trip
    // Whether stage s sends gradients back: only when layers before it train something.
    const auto sendsGradients = [&](size_t s) {
        for (size_t j = 0; s > 0 && j < partition.stages[s].firstLayer; ++j)
            if (costs[j].parameters > 0)
                return true;
        return false;
    };
    for (size_t s = 0; s < n; ++s) {
        const auto &p = partition.stages[s];
        double uploads = 0;
        double messages = 0, bytes = 0; // in and out, for the transport's CPU
        if (s + 1 < n) {
            const double out = wire(p.lastLayer - 1) + double(options.labelBytes);
            uploads += out / linkBytesPerSecond(*stages[s], *stages[s + 1], network);
            rtt += linkRttSeconds(*stages[s], *stages[s + 1], network);
            t.bytesPerMicrobatch += out;
            messages += 1, bytes += out;
            if (sendsGradients(s + 1))
                messages += 1, bytes += wire(p.lastLayer - 1);
        }
        if (s > 0) {
            const double in = wire(p.firstLayer - 1);
            messages += 1, bytes += in + double(options.labelBytes);
            if (sendsGradients(s)) {
                uploads += in / linkBytesPerSecond(*stages[s], *stages[s - 1], network);
                t.bytesPerMicrobatch += in;
                messages += 1, bytes += in;
            }
        }
        const double transport = transportSeconds(network, messages, bytes, stages[s]->gflops);
        t.computeSeconds.push_back(p.computeSeconds);
        t.transportSeconds.push_back(transport);
        const double busy = p.computeSeconds + transport;
        t.stageSeconds.push_back(std::max(busy, uploads));
        overlapped += busy + uploads - t.stageSeconds.back();
    }
    const double stageSum = std::accumulate(t.stageSeconds.begin(), t.stageSeconds.end(), 0.0) + overlapped;
    t.latencySeconds = stageSum + rtt;
    if (options.inFlight <= 0) // the root's own rule, as it sizes its window from what it measures
        t.window = train::pipelineWindow(
            {rtt, stageSum, *std::max_element(t.stageSeconds.begin(), t.stageSeconds.end()), int(n), maxWindow});
    t.microbatchesPerSecond = pipelineMicrobatchesPerSecond(t.stageSeconds, rtt + overlapped, t.window);
    return t;
}

} // namespace rookery::sim
