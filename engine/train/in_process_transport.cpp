// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/in_process_transport.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <vector>

#include "engine/common/error.h"

namespace rookery::train {
namespace {

// What one stage receives. Its own thread waits on `arrived`; the neighbours that send
// to it wait on `space`.
struct Inbox
{
    std::mutex mutex;
    std::condition_variable arrived;
    std::condition_variable space;
    std::deque<StageMessage> forward; // ForwardMessage, or the StopMessage that ends a run
    std::deque<BackwardMessage> backward;
};

} // namespace

struct InProcessTransport::Shared
{
    size_t capacity = 1;
    std::vector<std::unique_ptr<Inbox>> inboxes;
    std::vector<std::unique_ptr<Endpoint>> endpoints;
    // Read under every inbox's mutex by waiters; set before their mutexes are taken in
    // abort(), so no wake-up is lost.
    std::atomic<bool> stopped{false};
    mutable std::mutex stopMutex;
    std::optional<StopMessage> stop;

    void abort(StopMessage reason)
    {
        {
            std::lock_guard lock(stopMutex);
            if (stop)
                return;
            stop = std::move(reason);
            stopped = true;
        }
        for (auto &inbox : inboxes) {
            {
                std::lock_guard lock(inbox->mutex);
            }
            inbox->arrived.notify_all();
            inbox->space.notify_all();
        }
    }

    StopMessage stopReason() const
    {
        std::lock_guard lock(stopMutex);
        return *stop;
    }

    template <typename Queue, typename Message> bool push(Inbox &to, Queue &queue, Message message)
    {
        std::unique_lock lock(to.mutex);
        to.space.wait(lock, [&] { return stopped.load() || queue.size() < capacity; });
        if (stopped)
            return false;
        queue.push_back(std::move(message));
        lock.unlock();
        to.arrived.notify_one();
        return true;
    }

    // Takes the next message from `inbox` if there is one; call with its mutex held.
    std::optional<StageMessage> take(Inbox &inbox)
    {
        std::optional<StageMessage> out;
        if (stopped) {
            out = stopReason();
        } else if (!inbox.backward.empty()) {
            out = std::move(inbox.backward.front());
            inbox.backward.pop_front();
        } else if (!inbox.forward.empty()) {
            out = std::move(inbox.forward.front());
            inbox.forward.pop_front();
        }
        return out;
    }
};

class InProcessTransport::Endpoint final : public StageTransport
{
public:
    Endpoint(Shared &shared, int stage)
        : m_shared(shared)
        , m_stage(stage)
    { }

    bool sendForward(ForwardMessage message) override
    {
        Inbox &next = neighbour(m_stage + 1, "next");
        return m_shared.push(next, next.forward, StageMessage(std::move(message)));
    }

    bool sendBackward(BackwardMessage message) override
    {
        Inbox &previous = neighbour(m_stage - 1, "previous");
        return m_shared.push(previous, previous.backward, std::move(message));
    }

    bool sendFinished() override
    {
        Inbox &next = neighbour(m_stage + 1, "next");
        return m_shared.push(next, next.forward, StageMessage(StopMessage{StopKind::Finished, m_stage, {}}));
    }

    StageMessage receive() override
    {
        Inbox &inbox = *m_shared.inboxes[size_t(m_stage)];
        std::unique_lock lock(inbox.mutex);
        std::optional<StageMessage> message;
        inbox.arrived.wait(lock, [&] { return (message = m_shared.take(inbox)).has_value(); });
        lock.unlock();
        inbox.space.notify_all();
        return std::move(*message);
    }

    std::optional<StageMessage> poll() override
    {
        Inbox &inbox = *m_shared.inboxes[size_t(m_stage)];
        std::unique_lock lock(inbox.mutex);
        std::optional<StageMessage> message = m_shared.take(inbox);
        lock.unlock();
        if (message)
            inbox.space.notify_all();
        return message;
    }

    void abort(StopMessage reason) override { m_shared.abort(std::move(reason)); }

private:
    Inbox &neighbour(int stage, const char *which)
    {
        if (stage < 0 || size_t(stage) >= m_shared.inboxes.size())
            throw Error("pipeline stage " + std::to_string(m_stage) + " has no " + which + " stage to send to");
        return *m_shared.inboxes[size_t(stage)];
    }

    Shared &m_shared;
    int m_stage;
};

InProcessTransport::InProcessTransport(int stages, size_t capacity)
    : m_shared(std::make_shared<Shared>())
{
    if (stages < 1)
        throw Error("a pipeline needs at least one stage");
    m_shared->capacity = std::max<size_t>(1, capacity);
    for (int i = 0; i < stages; ++i) {
        m_shared->inboxes.push_back(std::make_unique<Inbox>());
        m_shared->endpoints.push_back(std::make_unique<Endpoint>(*m_shared, i));
    }
}

InProcessTransport::~InProcessTransport() = default;

int InProcessTransport::stages() const { return int(m_shared->inboxes.size()); }

StageTransport &InProcessTransport::endpoint(int stage)
{
    if (stage < 0 || stage >= stages())
        throw Error("pipeline has no stage " + std::to_string(stage));
    return *m_shared->endpoints[size_t(stage)];
}

void InProcessTransport::abort(StopMessage reason) { m_shared->abort(std::move(reason)); }

std::optional<StopMessage> InProcessTransport::aborted() const
{
    std::lock_guard lock(m_shared->stopMutex);
    return m_shared->stop;
}

} // namespace rookery::train
