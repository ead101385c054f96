// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <vector>

#include "engine/model/model_spec.h"
#include "engine/model/partitioner.h"
#include "engine/sim/population.h"
#include "engine/train/pipeline_window.h"

namespace rookery::sim {

/// What one pipeline does per microbatch, stage by stage.
struct PipelineTiming
{
    std::vector<double> computeSeconds;   ///< forward + backward, from the partitioner's cost model
    std::vector<double> transportSeconds; ///< the transport's CPU for the stage's messages in and out
    /// The slower of compute + transport and the stage's own uploads, which the network
    /// thread sends while the stage thread computes (model::StagePlan::seconds).
    std::vector<double> stageSeconds;
    /// One microbatch's round trip: every stage's compute, transport and uploads, and
    /// every link's RTT.
    double latencySeconds = 0;
    int window = 1; ///< microbatches in flight at the root
    double microbatchesPerSecond = 0;
    double bytesPerMicrobatch = 0; ///< activations forward and gradients backward, all boundaries
};

/// The pipeline rule: with `window` microbatches in flight, a pipeline runs at the
/// slower of its slowest stage and its window over its round trip:
/// min(1 / max(stageSeconds), window / (sum(stageSeconds) + linkRttSeconds)).
/// `linkRttSeconds` is whatever the trip holds beside the stage times (timePipeline
/// adds the uploads that overlap compute).
///
/// Thread safety: this and the functions below are pure.
double pipelineMicrobatchesPerSecond(const std::vector<double> &stageSeconds, double linkRttSeconds, int window);

/// The bandwidth-optimal ring all-reduce: reduce-scatter then all-gather, 2(n-1) steps,
/// in each of which every member sends bytes/n to its neighbour; so each member sends
/// 2(n-1)/n of the data. Every step waits for the slowest link (`bytesPerSecond`) and
/// one one-way latency (rtt / 2). 0 for a ring of one.
double ringAllReduceSeconds(int members, double bytes, double bytesPerSecond, double rttSeconds);

/// Bytes each member of a ring sends in one averaging round.
double ringBytesPerMember(int members, double bytes);

/// What `messages` messages of `bytes` in all cost one end in CPU, in seconds on a
/// volunteer of `gflops` (Network::transportFlopsPerMessage and ...PerByte).
double transportSeconds(const Network &network, double messages, double bytes, double gflops);

/// The transport's CPU for one member of a ring in one round: it sends and receives
/// 2(n-1) chunks each way, ringBytesPerMember(n, bytes) each way in all.
double ringTransportSeconds(const Network &network, int members, double bytes, double gflops);

/// A link from one volunteer to another: the sender's upload or the receiver's
/// download, whichever is slower, capped by the relay when either side is relayed.
double linkBytesPerSecond(const Volunteer &from, const Volunteer &to, const Network &network);
double linkRttSeconds(const Volunteer &from, const Volunteer &to, const Network &network);

/// Times a cluster's pipeline: compute from the partitioner's stage plans (the cost
/// model on the node's GFLOP/s), transfers of the activations forward and gradients
/// backward over each link (the partitioner's byte rule), the transport's CPU at each
/// end of those messages (transportSeconds), and the window of in-flight
/// microbatches: options.inFlight when set, else the root's own rule
/// (train::pipelineWindow: enough to cover one microbatch's trip, from stages + 1 up to
/// `maxWindow`). Activations and gradients cross the links at `valueBytes` a value: 4 as
/// float32 (the cost model's figures), 2 as the nodes' default bf16 or fp16
/// (--peer-compression); labels as int64.
PipelineTiming timePipeline(const std::vector<model::LayerCost> &costs, const model::PartitionOptions &options,
                            const model::Partition &partition, const std::vector<const Volunteer *> &stages,
                            const Network &network, int maxWindow = train::kDefaultMaxWindow, double valueBytes = 4);

} // namespace rookery::sim
