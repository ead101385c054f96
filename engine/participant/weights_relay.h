// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/common/named_tensor.h"
#include "engine/net/wire_message.h"

namespace rookery::participant {

class PeerMesh;
class PeerComplaints;

/// This stage's weights as other nodes may ask for them, and the asking.
///
/// The stage thread publishes a copy of its parameters at safe points (after an
/// averaging round, at the end of a run); requests are answered from that copy, never
/// from tensors in use. A request for the whole pipeline travels down stage by stage:
/// each stage answers it upstream and passes it on, and relays the answers of the
/// stages below; the root collects them and so holds the whole model (gatherPipeline:
/// the product's roots no longer do, they test through the pipeline). A node taking
/// over layers asks a peer that holds them for those by name.
///
/// Replies are checked before use: float32, finite, and each tensor's RMS at most
/// kMaxWeightRms (weights of a trained network are of order 1). A reply that fails is
/// not used, and counts against the peer that sent it in `complaints` (a reply the next
/// stage relays from further down counts against no one: it may only have passed it on).
///
/// Thread safety: publish() on the stage thread; deliver() on the network thread;
/// gatherPipeline() and fetch() block the calling thread (not the network thread).
class WeightsRelay
{
public:
    static constexpr uint32_t kAllStages = 0xFFFFFFFF;

    static constexpr double kMaxWeightRms = 1000.0;
    /// fetch() asks again this often: a peer with no snapshot yet drops a request.
    static constexpr std::chrono::seconds kFetchResend{2};

    WeightsRelay(PeerMesh &mesh, int stage, std::string previous, std::string next,
                 std::shared_ptr<PeerComplaints> complaints = {});

    void publish(std::vector<NamedTensor> parameters, uint64_t version);
    /// Drops the snapshot (requests go unanswered until the next publish): call before
    /// copying the weights for publish(), so that two copies are never held at once.
    void withdraw();
    bool hasSnapshot() const;

    /// Handles WeightsRequest and WeightsReply; ignores other messages.
    void deliver(const std::string &peer, net::Message &&message);

    /// Root: this stage's snapshot plus every stage's below, in layer order; nullopt when
    /// not all `stages` answered within `timeout` with a snapshot of at least `minVersion`
    /// (the root's own included).
    std::optional<std::vector<NamedTensor>> gatherPipeline(int stages, std::chrono::milliseconds timeout,
                                                           uint64_t minVersion = 0);
    /// The named tensors `peer`'s snapshot holds, in the order of `names` (a peer of
    /// another cluster may hold only some: its cut can differ); nullopt on timeout, when
    /// it has no snapshot, or holds none of them. Asked again every kFetchResend until
    /// `timeout`.
    std::optional<std::vector<NamedTensor>> fetch(const std::string &peer, const std::vector<std::string> &names,
                                                  std::chrono::milliseconds timeout);

private:
    net::WeightsReply replyFor(uint64_t requestId, const std::vector<std::string> &names) const;
    /// "" when every tensor of `reply` is usable; else what is wrong, logged and, when
    /// `blame` is set, counted against it.
    std::string checkReply(const net::WeightsReply &reply, const std::string &from, bool blame) const;
    std::shared_ptr<PeerComplaints> m_complaints;

    PeerMesh &m_mesh;
    const int m_stage;
    const std::string m_previous;
    const std::string m_next;

    mutable std::mutex m_mutex;
    std::condition_variable m_replied;
    std::vector<NamedTensor> m_snapshot;
    uint64_t m_version = 0;
    bool m_hasSnapshot = false;
    uint64_t m_nextRequest = 1;
    /// A request we made: whom we asked (only its replies count) and what came back.
    struct Pending
    {
        std::string from;
        std::vector<net::WeightsReply> replies;
    };
    std::map<uint64_t, Pending> m_pending;
    /// fetch() requests answered or given up, newest last: late answers to them (it asks
    /// more than once) are dropped rather than taken for answers to pass upstream.
    std::deque<uint64_t> m_fetched;
};

} // namespace rookery::participant
