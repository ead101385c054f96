// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/coord/coordinator_metrics.h"

#include <map>

#include "engine/common/prometheus_text.h"
#include "engine/common/version.h"

namespace rookery::coord {

std::string coordinatorMetrics(const StatusInputs &in)
{
    std::map<Presence, int> byPresence;
    double swarmRate = 0;
    for (const auto &n : in.nodes) {
        ++byPresence[n.presence];
        // Every sample passes each stage of its pipeline once: count it at the first.
        if (n.presence == Presence::Online && n.state == AssignmentState::Training && n.stage == 0)
            swarmRate += n.report.samplesPerSecond;
    }
    size_t clusters = 0;
    for (const auto &c : in.plan.clusters)
        clusters += c.feasible ? 1 : 0;

    PrometheusText m;
    using Type = PrometheusText::Type;
    m.gauge("rookery_coordinator_info", "This coordinator: software version, swarm, run and model.", 1,
            {{"version", kVersion}, {"swarm", in.swarm}, {"run", in.run.runId}, {"model", in.run.model.name}});
    m.gauge("rookery_coordinator_uptime_seconds", "Seconds since this coordinator started.",
            double(in.uptimeMs) / 1000.0);
    m.gauge("rookery_coordinator_peers", "Nodes online: linked and sending heartbeats.",
            double(byPresence[Presence::Online]));
    m.family("rookery_coordinator_nodes", Type::Gauge, "Known nodes by presence.");
    for (const Presence p : {Presence::Online, Presence::Lost, Presence::Gone, Presence::Left, Presence::Quarantined})
        m.sample(byPresence[p], {{"presence", std::string(presenceName(p))}});
    m.counter("rookery_coordinator_registrations_total", "Registrations accepted since start.",
              double(in.counters.registrations));
    m.counter("rookery_coordinator_refusals_total", "Registrations and requests refused since start.",
              double(in.counters.refusals));
    m.family("rookery_coordinator_refused_total", Type::Counter,
             "Refused since start, by the limit that refused them: no valid invite, an address over its "
             "registration rate or node count, connections over the per-address or total cap.");
    m.sample(double(in.counters.refusedNotInvited), {{"limit", "invite"}});
    m.sample(double(in.counters.refusedLimited), {{"limit", "address_registrations"}});
    m.sample(double(in.listener.refusedPerAddress), {{"limit", "address_connections"}});
    m.sample(double(in.listener.refusedFull), {{"limit", "connections"}});
    m.sample(double(in.counters.refusedBanned), {{"limit", "quarantine"}});
    m.counter("rookery_coordinator_quarantined_total",
              "Nodes quarantined since start: their peers refused their values as poisoned.",
              double(in.counters.quarantined));
    m.counter("rookery_coordinator_heartbeats_total", "Heartbeats received since start.",
              double(in.counters.heartbeats));
    m.counter("rookery_coordinator_assignment_pushes_total", "Assignments sent to nodes since start.",
              double(in.counters.assignmentPushes));
    m.counter("rookery_coordinator_relay_grants_total", "Relayed links granted to pairs of nodes since start.",
              double(in.counters.relayGrants));
    m.counter("rookery_coordinator_relayed_bytes_total", "Bytes copied by this coordinator's relay, both ways.",
              double(in.relayedBytes));
    {
        std::map<Reachability, double> byReach;
        for (const auto &n : in.nodes)
            byReach[n.reachability] += 1;
        m.family("rookery_coordinator_nodes_by_reachability", Type::Gauge,
                 "Known nodes by whether peers can dial them (the coordinator's check).");
        for (const Reachability r :
             {Reachability::Unknown, Reachability::Checking, Reachability::Direct, Reachability::Unreachable})
            m.sample(byReach[r], {{"reachability", std::string(reachabilityName(r))}});
    }
    m.gauge("rookery_coordinator_store_queue_jobs",
            "Database writes waiting for the writer (bounded: node metrics are dropped past 4,096).",
            double(in.storeQueuedJobs));
    m.counter("rookery_coordinator_store_dropped_metrics_total",
              "Batches of node metrics not written because the database was behind.", double(in.storeDroppedMetrics));
    m.counter("rookery_coordinator_store_held_back_total",
              "State writes that waited for room in the full database queue.", double(in.storeHeldBack));
    m.counter("rookery_coordinator_plan_rounds_total", "Planning rounds since start.", double(in.plan.rounds));
    m.gauge("rookery_coordinator_planned", "1 once a plan exists, else 0.", in.plan.hasPlan ? 1 : 0);
    m.gauge("rookery_coordinator_clusters", "Clusters in the plan that can train.", double(clusters));
    m.gauge("rookery_coordinator_predicted_samples_per_second", "The plan's predicted throughput of the swarm.",
            in.plan.predictedSamplesPerSecond);
    m.gauge("rookery_coordinator_swarm_samples_per_second",
            "Throughput of the swarm as its nodes report it: the sum over the first stage of every pipeline.",
            swarmRate);
    m.gauge("rookery_coordinator_steps_target", "Optimizer steps the run trains to.", double(in.run.totalSteps));
    return m.text();
}

} // namespace rookery::coord
