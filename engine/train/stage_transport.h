// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <optional>

#include "engine/train/stage_message.h"

namespace rookery::train {

/// One stage's links to its neighbours: down the pipeline to stage i+1, up to stage i-1.
/// The in-process transport (queues between threads) and the network transport (TLS
/// WebSockets) implement it; the stage runtime knows nothing else.
///
/// Contract, which keeps the pipeline free of deadlocks: a transport buffers at least
/// as many messages per direction as the root keeps microbatches in flight, so that
/// sends only block when a peer misbehaves; receiving offers backward messages before
/// forward ones; an abort reaches every stage, wakes every blocked call, and the first
/// abort's reason is the one every stage sees.
///
/// Thread safety: one stage thread sends and receives; abort() may be called from any
/// thread at any time.
class StageTransport
{
public:
    virtual ~StageTransport() = default;

    /// To the next stage. Blocks while its buffer is full; returns false once the
    /// pipeline was aborted (the message is dropped).
    virtual bool sendForward(ForwardMessage message) = 0;
    /// To the previous stage; as sendForward().
    virtual bool sendBackward(BackwardMessage message) = 0;
    /// Tells the next stage, after the forward messages already sent, that the run is
    /// over (a StopMessage of kind Finished). Returns false once aborted.
    virtual bool sendFinished() = 0;

    /// The next message: a pending abort first, then backward messages, then forward
    /// messages and Finished in the order they were sent. Blocks until there is one.
    virtual StageMessage receive() = 0;
    /// As receive(), but returns nothing at once when no message is waiting.
    virtual std::optional<StageMessage> poll() = 0;

    /// Stops the whole pipeline: every stage's receive() returns `reason` from now on,
    /// and sends return false. Only the first abort's reason is kept.
    virtual void abort(StopMessage reason) = 0;
};

} // namespace rookery::train
