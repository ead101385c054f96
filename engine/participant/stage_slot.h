// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "engine/net/wire_message.h"

namespace rookery::participant {

class AssignedStage;

/// The node's current AssignedStage, as the peer mesh's events see it: messages and
/// link events go to the stage there is (whose StageRouter takes them on); messages that
/// come while there is none are kept, up to kMaxEarly (the oldest dropped), and replayed
/// in order into the next stage. A neighbour that started its stage sooner may already
/// be sending activations, or averaging; the new stage drops what is not for it. Once
/// a new assignment is known (hold()), messages are kept even while the old stage is
/// still in place.
///
/// Thread safety: replace() and current() on the control thread (current() from any);
/// deliver(), linkChanged() and writable() on the network thread.
class StageSlot
{
public:
    static constexpr size_t kMaxEarly = 512;

    StageSlot() = default;
    /// Destroys the stage it holds, as replace(nullptr) does.
    ~StageSlot();
    StageSlot(const StageSlot &) = delete;
    StageSlot &operator=(const StageSlot &) = delete;

    std::shared_ptr<AssignedStage> current() const;
    /// Puts `stage` (may be null) in the place of the current one, replaying the kept
    /// messages into it, and destroys the old stage on this thread (which checkpoints
    /// and joins its threads), after the network thread is done with it.
    void replace(std::shared_ptr<AssignedStage> stage);

    /// A new assignment moves the current stage elsewhere: from now until the next
    /// replace(), messages are kept for the next stage instead of reaching this one,
    /// which would drop what its successor needs (a neighbour that restarted sooner
    /// sends activations for the new cut, and a pipeline missing them waits a minute).
    void hold();
    /// The assignment kept the stage after all: what was kept reaches it, in order.
    void release();

    void deliver(const std::string &peer, net::Message &&message);
    void linkChanged(const std::string &peer, bool up);
    void writable(const std::string &peer);

private:
    mutable std::mutex m_mutex;
    std::shared_ptr<AssignedStage> m_stage;
    bool m_held = false; ///< hold(): deliveries wait for the next stage
    std::deque<std::pair<std::string, net::Message>> m_early;
};

} // namespace rookery::participant
