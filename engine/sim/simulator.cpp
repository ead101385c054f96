// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/sim/simulator.h"

#include "engine/sim/simulator_impl.h"

namespace rookery::sim {

void Simulator::Impl::onRound(int s, double now)
{
    Swarm &w = swarms[size_t(s)];
    w.roundScheduled = false;
    w.lastRound = now;
    if (w.leaves.empty() && w.joins.empty())
        return;
    const auto started = std::chrono::steady_clock::now();
    auto change = w.plan->apply(w.leaves, w.joins);
    w.leaves.clear();
    w.joins.clear();
    if (!w.plan->isWorking() && w.plan->canHoldModel()) {
        try {
            change = w.plan->planAll();
        } catch (const Error &) {
            // The volunteers cannot hold the model after all: wait for more.
        }
    }
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    r.plannerWallSeconds += wall;
    r.plannerWorstRoundSeconds = std::max(r.plannerWorstRoundSeconds, wall);
    ++r.replans;
    r.replanTimes.push_back(now);
    rebuild(s, now);
}

// Every ring's averaging time; a stage averages its rings one after another, the
// stages of a cluster in parallel, so a cluster waits for its slowest stage. A round
// costs the wire time of the bandwidth-optimal ring plus the transport's CPU at the
// member for the chunks it sends and receives, plus its own work on the weights.
void Simulator::Impl::timeRings(int s, const std::vector<int> &globalOf, const std::map<int, int> &clusterOfPlan)
{
    const auto &plan = swarms[size_t(s)].plan->plan();
    std::map<int, double> perNode, bytesPerNode;
    for (const auto &ring : plan.rings) {
        const int n = int(ring.members.size());
        if (n < 2)
            continue;
        double params = 0;
        for (size_t l = ring.firstLayer; l < ring.lastLayer; ++l)
            params += double(costs[l].parameters);
        const double bytes = params * kFloatBytes; // what a member flattens and checks
        const double wire = double(precisionBytes(size_t(params), cfg.ringPrecision));
        double bandwidth = 1e300, rtt = 0;
        for (int k = 0; k < n; ++k) {
            const auto &a = pop.volunteers[size_t(globalOf[ring.members[size_t(k)]])];
            const auto &b = pop.volunteers[size_t(globalOf[ring.members[size_t((k + 1) % n)]])];
            bandwidth = std::min(bandwidth, linkBytesPerSecond(a, b, pop.network));
            rtt = std::max(rtt, linkRttSeconds(a, b, pop.network));
        }
        const double seconds = ringAllReduceSeconds(n, wire, bandwidth, rtt);
        for (size_t m : ring.members) {
            const double gflops = pop.volunteers[size_t(globalOf[m])].gflops;
            perNode[globalOf[m]] += seconds + ringTransportSeconds(pop.network, n, wire, gflops) +
                                    cfg.ringFlopsPerByte * bytes / (gflops * 1e9);
            bytesPerNode[globalOf[m]] += ringBytesPerMember(n, wire);
        }
    }
    for (const auto &[pc, index] : clusterOfPlan) {
        Cluster &c = clusters[size_t(index)];
        c.averagingSeconds = 0;
        c.ringBytesPerRound = 0;
        for (int m : c.members) {
            c.averagingSeconds = std::max(c.averagingSeconds, perNode[m]);
            c.ringBytesPerRound += bytesPerNode[m];
        }
        const double mb = c.timing.microbatchesPerSecond;
        const double interval = cfg.averagingInterval;
        const double rate = mb > 0 ? double(cfg.microbatch) * interval / (interval / mb + c.averagingSeconds) : 0;
        if (c.active) {
            flush(c, lastT);
            totalRate += rate - c.samplesPerSecond;
        }
        c.samplesPerSecond = rate;
    }
}

void Simulator::Impl::bucket(double now, double &lastSamples, double &lastMessages, double &lastOnline,
                             int64_t &lastReplans)
{
    const double messages = discreteMessages + 2 * onlineSeconds / cfg.heartbeatSeconds + double(r.assignmentPushes);
    TimePoint p;
    p.hours = now / 3600;
    p.samplesPerSecond = (r.samples - lastSamples) / cfg.bucketSeconds;
    p.coordinatorMessagesPerSecond = (messages - lastMessages) / cfg.bucketSeconds;
    p.online = (onlineSeconds - lastOnline) / cfg.bucketSeconds;
    p.replans = r.replans - lastReplans;
    for (const auto &w : swarms)
        for (const auto &[pc, index] : w.clusterOfPlan) {
            ++p.clusters;
            p.training += int(clusters[size_t(index)].members.size());
        }
    r.series.push_back(p);
    lastSamples = r.samples;
    lastMessages = messages;
    lastOnline = onlineSeconds;
    lastReplans = r.replans;
}

Simulator::Simulator(Population population, SimConfig config)
    : m_impl(std::make_unique<Impl>(std::move(population), std::move(config)))
{ }

Simulator::~Simulator() = default;

std::string Simulator::nodeId(size_t volunteer) { return "v" + std::to_string(volunteer); }

const SimConfig &Simulator::config() const { return m_impl->cfg; }

const coord::PlanState &Simulator::planState(int index) const { return *m_impl->swarms.at(size_t(index)).plan; }

SimResult Simulator::run(const std::function<void(double)> &progress)
{
    Impl &m = *m_impl;
    const double end = m.cfg.hours * 3600;
    for (size_t v = 0; v < m.pop.volunteers.size(); ++v) {
        const auto &vol = m.pop.volunteers[v];
        for (const auto &s : vol.sessions) {
            if (s.start >= end)
                break;
            m.queue.push(s.start, kSessionStart, int64_t(v));
            if (s.end < end)
                m.queue.push(std::max(s.end, s.start), kSessionEnd, int64_t(v));
        }
        for (const auto &p : vol.pauses) {
            if (p.start >= end)
                break;
            m.queue.push(p.start, kPauseStart, int64_t(v));
            if (p.end < end)
                m.queue.push(p.end, kPauseEnd, int64_t(v));
        }
    }
    for (double t = m.cfg.bucketSeconds; t <= end + 1e-9; t += m.cfg.bucketSeconds)
        m.queue.push(t, kBucket, 0);
    double lastSamples = 0, lastMessages = 0, lastOnline = 0;
    int64_t lastReplans = 0;
    int reported = -1;
    while (!m.queue.empty()) {
        const Event e = m.queue.pop();
        if (e.time > end)
            break;
        m.advance(e.time);
        ++m.r.events;
        const size_t v = size_t(e.subject);
        switch (e.kind) {
        case kSessionStart:
            m.onSessionStart(v, e.time);
            break;
        case kSessionEnd:
            m.onSessionEnd(v, e.time);
            break;
        case kPauseStart:
            m.onPause(v, true, e.time);
            break;
        case kPauseEnd:
            m.onPause(v, false, e.time);
            break;
        case kGraceExpiry:
            m.onGraceExpiry(v, e.token, e.time);
            break;
        case kRound:
            m.onRound(int(e.subject), e.time);
            break;
        case kRestartDone:
            m.refresh(int(e.subject), e.time);
            break;
        case kBucket:
            m.bucket(e.time, lastSamples, lastMessages, lastOnline, lastReplans);
            break;
        }
        const int permille = int(e.time / end * 500);
        if (progress && permille != reported) {
            reported = permille;
            progress(std::min(1.0, e.time / end));
        }
    }
    m.advance(end);
    for (size_t i = 0; i < m.clusters.size(); ++i)
        if (m.clusters[i].alive)
            m.flush(m.clusters[i], end);
    for (const auto &n : m.nodes)
        if (n.heldSeconds > 0)
            m.r.utilisation.push_back(n.busySeconds / n.heldSeconds);
    for (const auto &w : m.swarms)
        for (const auto &[pc, index] : w.clusterOfPlan) {
            const Cluster &c = m.clusters[size_t(index)];
            m.r.clusters.push_back({c.coordinator, int(c.members.size()), c.samplesPerSecond});
        }
    m.r.simulatedSeconds = end;
    m.r.coordinatorMessages =
        m.discreteMessages + 2 * m.onlineSeconds / m.cfg.heartbeatSeconds + double(m.r.assignmentPushes);
    if (progress)
        progress(1);
    return m.r;
}

} // namespace rookery::sim
