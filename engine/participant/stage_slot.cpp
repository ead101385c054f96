// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/participant/stage_slot.h"

#include <chrono>
#include <thread>

#include "engine/participant/assigned_stage.h"

namespace rookery::participant {

StageSlot::~StageSlot() { replace(nullptr); }

std::shared_ptr<AssignedStage> StageSlot::current() const
{
    std::lock_guard lock(m_mutex);
    return m_stage;
}

void StageSlot::replace(std::shared_ptr<AssignedStage> stage)
{
    std::shared_ptr<AssignedStage> old;
    {
        std::lock_guard lock(m_mutex);
        if (stage)
            for (auto &[peer, m] : std::exchange(m_early, {}))
                stage->deliver(peer, std::move(m));
        old = std::exchange(m_stage, std::move(stage));
        m_held = false;
    }
    // The network thread may hold a copy for a moment (a message or link event in
    // flight). Let it finish, so that the destructor, which joins the stage's threads
    // and checkpoints, runs here and never stalls the network thread.
    for (int i = 0; old && old.use_count() > 1 && i < 5000; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    old.reset(); // checkpoints and joins, outside the lock
}

void StageSlot::hold()
{
    std::lock_guard lock(m_mutex);
    m_held = m_stage != nullptr;
}

void StageSlot::release()
{
    std::lock_guard lock(m_mutex); // held while replaying, so that later messages come after
    if (!std::exchange(m_held, false) || !m_stage)
        return;
    for (auto &[peer, m] : std::exchange(m_early, {}))
        m_stage->deliver(peer, std::move(m));
}

void StageSlot::deliver(const std::string &peer, net::Message &&message)
{
    std::shared_ptr<AssignedStage> stage;
    {
        std::lock_guard lock(m_mutex);
        stage = m_stage;
        if (!stage || m_held) {
            if (m_early.size() >= kMaxEarly)
                m_early.pop_front();
            m_early.emplace_back(peer, std::move(message));
            return;
        }
    }
    stage->deliver(peer, std::move(message));
}

void StageSlot::linkChanged(const std::string &peer, bool up)
{
    if (auto stage = current())
        stage->linkChanged(peer, up);
}

void StageSlot::writable(const std::string &peer)
{
    if (auto stage = current())
        stage->writable(peer);
}

} // namespace rookery::participant
