// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/swarm/swarm_planner.h"

namespace rookery::coord {

/// One volunteer's place in the plan, by node id (addresses are added later).
struct Placement
{
    struct Ring
    {
        uint64_t id = 0;
        size_t firstLayer = 0;
        size_t lastLayer = 0;
        size_t rank = 0;
        /// Node ids in ring order, one list shared by every member's placement.
        std::shared_ptr<const std::vector<std::string>> members;
        bool operator==(const Ring &o) const
        {
            return id == o.id && firstLayer == o.firstLayer && lastLayer == o.lastLayer && rank == o.rank &&
                   (members == o.members || (members && o.members && *members == *o.members));
        }
    };
    std::string nodeId;
    bool training = false;
    std::string reason; ///< why it waits
    int cluster = -1;
    int clusterCount = 0;
    int stage = 0;
    int stages = 0;
    size_t firstLayer = 0;
    size_t lastLayer = 0;
    std::string previous; ///< node id; "" for the first stage
    std::string next;     ///< node id; "" for the last stage
    std::vector<Ring> rings;
    bool operator==(const Placement &) const = default;
};

/// What a batch of membership changes did.
struct PlanChange
{
    std::vector<std::string> moved; ///< volunteers whose cluster changed (not those who came or went)
    std::vector<int> changedClusters;
    bool replanned = false; ///< a whole new plan (first plan, or an operator's request)
};

/// The coordinator's planner state: the volunteers it plans for (in a fixed order), the
/// clusters they form and each cluster's pipeline, built with engine/swarm. The first
/// plan is a full planSwarm(); after it, joins and leaves are incremental (planJoin /
/// planLeave) and only clusters they touch are re-cut, so existing assignments stay
/// where they can. Deterministic for a given seed and sequence of changes.
///
/// Thread safety: none; one owner (the coordinator's planner thread).
class PlanState
{
public:
    PlanState(swarm::PlanModel model, swarm::FormationOptions options);

    const swarm::PlanModel &model() const { return m_model; }
    const swarm::ModelDemand &demand() const { return m_demand; }
    size_t size() const { return m_ids.size(); }
    bool contains(const std::string &nodeId) const;
    /// A plan was made (clusters exist); see isWorking().
    bool hasPlan() const { return m_hasPlan; }
    /// At least one cluster has a pipeline: someone trains.
    bool isWorking() const;
    /// Whether the volunteers could hold the model together (a necessary condition:
    /// the largest maxStages of them have the memory).
    bool canHoldModel() const;

    /// Applies leaves, then joins, in order. Without a plan, volunteers just wait (call
    /// planAll()). With one, each join is placed by planJoin and each leave re-planned by
    /// planLeave; then only the clusters they touched are re-cut. A node that is both
    /// left and joined is re-placed afresh. Unknown leaves are ignored. The clusters of
    /// the volunteers in `keepClustersOf` take no newcomer (a registration storm: those
    /// told their placement are not re-cut for it); leaves still re-cut them.
    ///
    /// `finished`: volunteers that have trained the run to its end. When one leaves and
    /// every member left in its cluster is among them, nobody is moved: the cluster's
    /// work is done, and its members, about to leave too, go out of the plan with it
    /// (moving one into a cluster still training would re-cut that cluster, at its last
    /// steps, around a node that is leaving). Their own leaves are then ignored.
    PlanChange apply(const std::vector<std::string> &leaves,
                     const std::vector<std::pair<std::string, swarm::Capacity>> &joins,
                     const std::set<std::string> &keepClustersOf = {}, const std::set<std::string> &finished = {});
    /// A whole new plan over everyone (planSwarm). Throws rookery::Error when the
    /// volunteers cannot hold the model; the previous plan is then kept.
    PlanChange planAll();
    /// A volunteer is slower than its profile said (the straggler check): its capacity's
    /// GFLOP/s times `factor`, and its cluster re-cut, moving layers away from it. Members
    /// stay where they are. changedClusters is empty when no other cut or stage order
    /// suits it better (it may hold a single layer that cannot be split), for unknown
    /// ids and for clusters without a pipeline.
    PlanChange recalibrate(const std::string &nodeId, double factor);
    /// A volunteer's compute is `factor` times what the plan has (its CPU caps changed):
    /// its capacity scales, either way, and its cluster is re-cut if it has a pipeline.
    /// Members stay. No change for unknown ids or a factor that is not positive.
    PlanChange rescaleCompute(const std::string &nodeId, double factor);
    /// A volunteer's CPU caps now offer `scale` times the compute it registered with
    /// (its heartbeats' compute_offer_scale). Once that differs from the scale last
    /// applied by kOfferChange or more, either way, its capacity follows
    /// (rescaleCompute). A join resets it: the registration has the caps of its day.
    PlanChange setComputeOfferScale(const std::string &nodeId, double scale);
    static constexpr double kOfferChange = 1.5;

    /// A volunteer's measured uploads to its neighbours, by their node ids (its
    /// heartbeats' link figures), whole: the next cut of its cluster uses them. Nothing is
    /// re-cut now. Kept until it leaves the plan; may come before it joins.
    void setMeasuredLinks(const std::string &nodeId, std::map<std::string, double> uploadTo);

    /// Every volunteer's placement, in plan order.
    std::vector<Placement> placements() const;
    const swarm::SwarmPlan &plan() const { return m_plan; }
    const std::vector<std::string> &ids() const { return m_ids; }
    const std::vector<swarm::Capacity> &capacities() const { return m_capacities; }

    /// The plan as JSON (volunteer order, clusters, stage orders and cuts), enough to
    /// restore it exactly with the same capacities.
    std::string toJson() const;
    /// Throws rookery::Error when `json` is malformed or names a volunteer `capacities`
    /// lacks.
    static PlanState fromJson(swarm::PlanModel model, swarm::FormationOptions options, const std::string &json,
                              const std::map<std::string, swarm::Capacity> &capacities);

private:
    std::vector<swarm::PlanVolunteer> volunteers() const;
    size_t indexOf(const std::string &nodeId) const;
    bool hasPipeline(size_t index) const; ///< its cluster has a pipeline
    void erase(size_t index);
    /// The other members of the leaver's cluster when every one of them is in
    /// `finished` (none: an empty list); nullopt when one still trains.
    std::optional<std::vector<size_t>> finishedMatesOf(size_t leaver, const std::set<std::string> &finished) const;
    void complete(const std::vector<int> &changed);
    void undoBreakingArrivals(const std::vector<std::string> &arrivals, const std::set<int> &working);

    swarm::PlanModel m_model;
    swarm::FormationOptions m_options;
    swarm::ModelDemand m_demand;
    std::vector<std::string> m_ids;
    std::vector<swarm::Capacity> m_capacities;
    std::map<std::string, std::map<std::string, double>> m_uploadTo; ///< measured links, by node id
    std::map<std::string, double> m_offerScale; ///< compute offer scales applied, by node id (absent: 1)
    std::vector<int> m_clusterOf;
    bool m_hasPlan = false;
    swarm::SwarmPlan m_plan;
};

} // namespace rookery::coord
