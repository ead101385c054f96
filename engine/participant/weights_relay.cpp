// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/participant/weights_relay.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <thread>

#include "engine/common/log.h"
#include "engine/common/tensor_buffer.h"
#include "engine/participant/peer_complaints.h"
#include "engine/participant/peer_mesh.h"
#include "engine/participant/testing_misbehaviour.h"

namespace rookery::participant {
namespace {

TensorBuffer toBuffer(const NamedTensor &t) { return tensorBufferFromBytes(t.dtype, t.shape, t.data); }

NamedTensor fromBuffer(const net::NamedTensorBuffer &b)
{
    NamedTensor t;
    t.name = b.name;
    t.dtype = b.tensor.dtype;
    t.shape = b.tensor.shape;
    t.data.assign(b.tensor.data, b.tensor.data + b.tensor.bytes);
    return t;
}

// Request ids are random per process so that two roots' requests never collide.
uint64_t randomBase()
{
    std::random_device rd;
    return (uint64_t(rd()) << 32) ^ rd();
}

} // namespace

WeightsRelay::WeightsRelay(PeerMesh &mesh, int stage, std::string previous, std::string next,
                           std::shared_ptr<PeerComplaints> complaints)
    : m_complaints(std::move(complaints))
    , m_mesh(mesh)
    , m_stage(stage)
    , m_previous(std::move(previous))
    , m_next(std::move(next))
    , m_nextRequest(randomBase())
{ }

void WeightsRelay::publish(std::vector<NamedTensor> parameters, uint64_t version)
{
    std::lock_guard lock(m_mutex);
    m_snapshot = std::move(parameters);
    m_version = version;
    m_hasSnapshot = true;
}

void WeightsRelay::withdraw()
{
    std::vector<NamedTensor> old;
    {
        std::lock_guard lock(m_mutex);
        old.swap(m_snapshot);
        m_hasSnapshot = false;
    }
}

bool WeightsRelay::hasSnapshot() const
{
    std::lock_guard lock(m_mutex);
    return m_hasSnapshot;
}

net::WeightsReply WeightsRelay::replyFor(uint64_t requestId, const std::vector<std::string> &names) const
{
    net::WeightsReply reply{requestId, uint32_t(m_stage), m_version, {}};
    for (const auto &t : m_snapshot)
        if (names.empty() || std::find(names.begin(), names.end(), t.name) != names.end())
            reply.tensors.push_back({t.name, toBuffer(t)});
    if (testingMisbehaviour().forgedWeights) // a hostile holder: every value NaN
        for (auto &t : reply.tensors)
            if (t.tensor.dtype == DType::Float32) {
                std::vector<float> nan(t.tensor.bytes / sizeof(float), std::numeric_limits<float>::quiet_NaN());
                std::vector<uint8_t> bytes(t.tensor.bytes);
                std::memcpy(bytes.data(), nan.data(), bytes.size());
                t.tensor = tensorBufferFromBytes(DType::Float32, t.tensor.shape, std::move(bytes));
            }
    return reply;
}

std::string WeightsRelay::checkReply(const net::WeightsReply &reply, const std::string &from, bool blame) const
{
    std::string why;
    for (const auto &t : reply.tensors) {
        if (t.tensor.dtype != DType::Float32 || t.tensor.bytes % sizeof(float) != 0) {
            why = t.name + " is not float32";
            break;
        }
        const size_t n = t.tensor.bytes / sizeof(float);
        double sum = 0;
        bool finite = true;
        for (size_t i = 0; i < n && finite; ++i) {
            float v;
            std::memcpy(&v, t.tensor.data + i * sizeof(float), sizeof v);
            finite = std::isfinite(v);
            sum += double(v) * double(v);
        }
        if (!finite) {
            why = t.name + " holds a non-finite value";
            break;
        }
        if (n > 0 && std::sqrt(sum / double(n)) > kMaxWeightRms) {
            why = t.name + " has an RMS of " + std::to_string(std::sqrt(sum / double(n))) + ", over " +
                  std::to_string(int(kMaxWeightRms));
            break;
        }
    }
    if (!why.empty()) {
        if (blame && m_complaints)
            m_complaints->refused(from);
        log::warning("swarm", "stage " + std::to_string(m_stage) + ": refused the weights of peer " +
                                  from.substr(0, 12) + " (stage " + std::to_string(reply.stage) + "): " + why);
    }
    return why;
}

void WeightsRelay::deliver(const std::string &peer, net::Message &&message)
{
    if (auto *request = std::get_if<net::WeightsRequest>(&message)) {
        net::WeightsReply reply;
        {
            std::lock_guard lock(m_mutex);
            if (!m_hasSnapshot)
                return; // nothing to give yet; the asker asks again (fetch: every kFetchResend)
            reply = replyFor(request->requestId,
                             request->stage == kAllStages ? std::vector<std::string>{} : request->names);
        }
        (void)m_mesh.send(peer, reply);
        if (request->stage == kAllStages && peer == m_previous && !m_next.empty())
            (void)m_mesh.send(m_next, *request); // pass the pipeline request on
        return;
    }
    if (auto *reply = std::get_if<net::WeightsReply>(&message)) {
        std::unique_lock lock(m_mutex);
        auto it = m_pending.find(reply->requestId);
        if (it != m_pending.end()) {
            if (peer != it->second.from) { // ids are guessable; only the peer asked answers
                lock.unlock();
                log::warning("swarm", "ignored weights from peer " + peer.substr(0, 12) +
                                          ": they answer a request made to another peer");
                return;
            }
            it->second.replies.push_back(std::move(*reply));
            m_replied.notify_all();
            return;
        }
        if (std::find(m_fetched.begin(), m_fetched.end(), reply->requestId) != m_fetched.end())
            return; // a late answer to a fetch that asked more than once
        lock.unlock();
        if (peer == m_next && !m_previous.empty())
            (void)m_mesh.send(m_previous, *reply); // relay an answer from below upstream
    }
}

std::optional<std::vector<NamedTensor>> WeightsRelay::gatherPipeline(int stages, std::chrono::milliseconds timeout,
                                                                     uint64_t minVersion)
{
    std::vector<NamedTensor> all;
    uint64_t id;
    {
        std::lock_guard lock(m_mutex);
        if (!m_hasSnapshot || m_version < minVersion)
            return std::nullopt;
        all = m_snapshot;
        id = m_nextRequest++;
        m_pending[id].from = m_next; // every stage below answers through it
    }
    if (stages > 1 && m_mesh.send(m_next, net::WeightsRequest{id, kAllStages, {}}) != net::SendResult::Queued) {
        std::lock_guard lock(m_mutex);
        m_pending.erase(id);
        return std::nullopt;
    }
    std::unique_lock lock(m_mutex);
    const bool complete =
        m_replied.wait_for(lock, timeout, [&] { return int(m_pending[id].replies.size()) >= stages - 1; });
    auto replies = std::move(m_pending[id].replies);
    m_pending.erase(id);
    lock.unlock();
    if (!complete)
        return std::nullopt;
    for (const auto &r : replies)
        if (r.weightVersion < minVersion)
            return std::nullopt;  // a stage has not finished yet: ask again later
    for (const auto &r : replies) // the next stage's own reply is its own; others it only relayed
        if (!checkReply(r, m_next, r.stage == uint32_t(m_stage + 1)).empty())
            return std::nullopt;
    std::sort(replies.begin(), replies.end(), [](const auto &a, const auto &b) { return a.stage < b.stage; });
    for (const auto &r : replies)
        for (const auto &t : r.tensors)
            all.push_back(fromBuffer(t));
    return all;
}

std::optional<std::vector<NamedTensor>>
WeightsRelay::fetch(const std::string &peer, const std::vector<std::string> &names, std::chrono::milliseconds timeout)
{
    uint64_t id;
    {
        std::lock_guard lock(m_mutex);
        id = m_nextRequest++;
        m_pending[id].from = peer;
    }
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    bool got = false;
    while (!got) {
        // The link to a peer we do not usually talk to may still be opening: retry the send.
        while (m_mesh.send(peer, net::WeightsRequest{id, uint32_t(m_stage), names}) != net::SendResult::Queued) {
            if (std::chrono::steady_clock::now() > deadline) {
                std::lock_guard lock(m_mutex);
                m_pending.erase(id);
                return std::nullopt;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        // A peer with no snapshot yet (its own stage starting, after a re-plan) drops the
        // request unanswered: ask again every kFetchResend until the deadline.
        std::unique_lock lock(m_mutex);
        const auto until = std::min(deadline, std::chrono::steady_clock::now() + kFetchResend);
        got = m_replied.wait_until(lock, until, [&] { return !m_pending[id].replies.empty(); });
        if (!got && std::chrono::steady_clock::now() >= deadline)
            break;
    }
    std::unique_lock lock(m_mutex);
    auto replies = std::move(m_pending[id].replies);
    m_pending.erase(id);
    m_fetched.push_back(id);
    if (m_fetched.size() > 64)
        m_fetched.pop_front();
    lock.unlock();
    if (!got || !checkReply(replies.front(), peer, true).empty())
        return std::nullopt;
    // What it holds of what was asked, in the order asked: anything else, or a name twice,
    // is not an answer to this request.
    std::vector<NamedTensor> out;
    size_t next = 0;
    for (const auto &t : replies.front().tensors) {
        while (next < names.size() && names[next] != t.name)
            ++next;
        if (next == names.size())
            return std::nullopt;
        out.push_back(fromBuffer(t));
        ++next;
    }
    if (out.empty())
        return std::nullopt;
    return out;
}

} // namespace rookery::participant
