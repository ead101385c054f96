// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstddef>
#include <memory>
#include <optional>

#include "engine/train/stage_transport.h"

namespace rookery::train {

/// The links of a pipeline whose stages are threads of one process: for every stage a
/// bounded queue of forward messages and one of backward messages, guarded by a mutex
/// and condition variables (blocked threads sleep; nothing spins). Tensors cross by
/// reference: a message's TensorBuffer keeps the sender's tensor alive.
///
/// Thread safety: endpoint(i) is for stage i's thread; abort() and stop() from any thread.
class InProcessTransport
{
public:
    /// `capacity` messages per queue; the pipeline passes its in-flight window, which
    /// no queue can exceed when stages follow the protocol.
    InProcessTransport(int stages, size_t capacity);
    ~InProcessTransport();
    InProcessTransport(const InProcessTransport &) = delete;
    InProcessTransport &operator=(const InProcessTransport &) = delete;

    int stages() const;
    StageTransport &endpoint(int stage);

    /// Aborts the pipeline from outside (StageTransport::abort on any endpoint is the same).
    void abort(StopMessage reason);
    /// The first abort, if any.
    std::optional<StopMessage> aborted() const;

private:
    struct Shared;
    class Endpoint;
    std::shared_ptr<Shared> m_shared;
};

} // namespace rookery::train
