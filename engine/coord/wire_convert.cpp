// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/coord/wire_convert.h"

#include <algorithm>
#include <limits>

#include "engine/common/error.h"

namespace rookery::coord {
namespace {

net::PeerAddress toWire(const PeerRef &p) { return {p.nodeId, p.address, p.unreachable}; }
PeerRef fromWire(const net::PeerAddress &p) { return {p.nodeId, p.address, p.unreachable}; }

uint32_t narrow(int64_t v) { return uint32_t(std::clamp<int64_t>(v, 0, std::numeric_limits<uint32_t>::max())); }

} // namespace

net::WireLimits coordinatorLinkLimits()
{
    net::WireLimits l;
    l.maxHeaderBytes = 16u << 20;
    l.maxMessageBytes = 32u << 20;
    l.maxListEntries = 1u << 16;
    return l;
}

net::WireLimits coordinatorInboundLimits()
{
    net::WireLimits l = coordinatorLinkLimits();
    l.maxHeaderBytes = 64u << 10;
    l.maxMessageBytes = 64u << 10;
    l.maxListEntries = 4096;
    return l;
}

net::AssignmentInfo toWire(const Assignment &a)
{
    net::AssignmentInfo w;
    w.version = a.version;
    w.state = net::AssignmentState(int(a.state));
    w.reason = a.reason;
    w.cluster = a.cluster;
    w.clusterCount = narrow(a.clusterCount);
    w.stage = narrow(a.stage);
    w.stages = narrow(a.stages);
    w.firstLayer = narrow(int64_t(a.firstLayer));
    w.lastLayer = narrow(int64_t(a.lastLayer));
    w.previous = toWire(a.previous);
    w.next = toWire(a.next);
    for (const auto &r : a.rings) {
        w.rings.push_back({r.ringId, narrow(int64_t(r.firstLayer)), narrow(int64_t(r.lastLayer)),
                           narrow(int64_t(r.rank)), narrow(int64_t(r.size)), toWire(r.previous), toWire(r.next)});
    }
    w.shardIndex = narrow(a.shard.index);
    w.shardCount = narrow(a.shard.count);
    w.weightsFrom = toWire(a.weightsFrom);
    w.unreachable = a.unreachable;
    return w;
}

Assignment fromWire(const net::AssignmentInfo &w)
{
    Assignment a;
    a.version = w.version;
    a.state = AssignmentState(int(w.state));
    a.reason = w.reason;
    a.cluster = w.cluster;
    a.clusterCount = int(w.clusterCount);
    a.stage = int(w.stage);
    a.stages = int(w.stages);
    a.firstLayer = w.firstLayer;
    a.lastLayer = w.lastLayer;
    a.previous = fromWire(w.previous);
    a.next = fromWire(w.next);
    for (const auto &r : w.rings) {
        a.rings.push_back(
            {r.ringId, r.firstLayer, r.lastLayer, r.rank, r.size, fromWire(r.previous), fromWire(r.next)});
    }
    a.shard = {int(w.shardIndex), int(w.shardCount)};
    a.weightsFrom = fromWire(w.weightsFrom);
    a.unreachable = w.unreachable;
    return a;
}

net::RunInfo toWire(const RunConfig &r)
{
    return {model::toJson(r.model),
            train::toJson(r.optimizer),
            narrow(r.microbatch),
            narrow(r.accumulation),
            narrow(r.averagingInterval),
            r.seed,
            uint64_t(r.totalSteps),
            r.dataset,
            r.runId,
            r.outerLearningRate,
            r.outerMomentum,
            r.overlapAveraging,
            r.datasetSha256,
            narrow(r.maxWindow)};
}

RunConfig fromWire(const net::RunInfo &w)
{
    RunConfig r;
    try {
        r.model = model::modelSpecFromJson(w.modelJson);
    } catch (const Error &e) {
        throw Error(std::string("the run's model is not usable: ") + e.what());
    }
    try {
        r.optimizer = train::optimizerConfigFromJson(w.optimizerJson);
    } catch (const Error &e) {
        throw Error(std::string("the run's optimizer settings are not usable: ") + e.what());
    }
    r.runId = w.runId;
    r.microbatch = w.microbatch;
    r.accumulation = w.accumulation;
    r.averagingInterval = w.averagingInterval;
    // 0: a coordinator from before the outer optimizer, which averaged plainly.
    r.outerLearningRate = w.outerLearningRate == 0 ? 1 : w.outerLearningRate;
    r.outerMomentum = w.outerMomentum;
    r.overlapAveraging = w.overlapAveraging;
    r.seed = w.seed;
    r.totalSteps = int64_t(std::min<uint64_t>(w.totalSteps, uint64_t(std::numeric_limits<int64_t>::max())));
    r.dataset = w.dataset;
    r.datasetSha256 = w.datasetSha256;
    r.maxWindow = w.maxWindow;
    validate(r);
    return r;
}

net::NodeMetrics toWire(const NodeReport &r)
{
    net::NodeMetrics m{r.samplesPerSecond,
                       uint64_t(std::max<int64_t>(0, r.step)),
                       r.loss,
                       net::NodeActivity(int(r.activity)),
                       uint64_t(std::max<int64_t>(0, r.samplesTotal)),
                       r.busyFraction,
                       net::AwayReason(int(r.away)),
                       uint64_t(std::max<int64_t>(0, r.sleptSeconds)),
                       r.ownSamplesPerSecond,
                       {},
                       {}};
    for (const auto &[peer, refused] : r.complaints)
        m.complaints.emplace_back(peer, uint64_t(std::max<int64_t>(0, refused)));
    for (const auto &[peer, link] : r.links)
        m.links.push_back({peer, link.uploadBytesPerSecond, uint64_t(std::max<int64_t>(0, link.roundTripUs))});
    m.computeOfferScale = r.computeOfferScale;
    return m;
}

NodeReport fromWire(const net::NodeMetrics &m)
{
    auto clampI = [](uint64_t v) {
        return int64_t(std::min<uint64_t>(v, uint64_t(std::numeric_limits<int64_t>::max())));
    };
    NodeReport r{m.samplesPerSecond,
                 clampI(m.step),
                 m.loss,
                 NodeActivity(int(m.state)),
                 clampI(m.samplesTotal),
                 m.busyFraction,
                 AwayReason(int(m.away)),
                 clampI(m.sleptSeconds),
                 m.ownSamplesPerSecond,
                 {}};
    for (const auto &[peer, refused] : m.complaints)
        r.complaints[peer] = clampI(refused);
    for (const auto &l : m.links)
        r.links[l.peerId] = {l.uploadBytesPerSecond, clampI(l.roundTripUs)};
    r.computeOfferScale = m.computeOfferScale;
    return r;
}

} // namespace rookery::coord
