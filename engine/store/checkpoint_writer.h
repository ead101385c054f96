// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "engine/store/checkpoint_store.h"

namespace rookery::store {

/// The store's writer thread. The trainer hands over a copy of its state and carries
/// on; if the disk falls behind, a newer state replaces the one still waiting, so the
/// trainer never blocks and memory holds at most two states.
///
/// Thread safety: submit() and flush() from any thread. The callbacks run on the
/// writer thread.
class CheckpointWriter
{
public:
    struct Callbacks
    {
        std::function<void(int64_t step)> started;
        std::function<void(const CheckpointInfo &)> saved;
        std::function<void(const std::string &error)> failed;
    };

    CheckpointWriter(CheckpointStore &store, std::string run, int keepNewest, Callbacks callbacks = {});
    /// Finishes the write in progress and the one waiting, then stops.
    ~CheckpointWriter();

    void submit(train::TrainingState state);
    /// Blocks until everything submitted so far is on disk (or failed).
    void flush();
    int64_t lastSavedStep() const;
    /// A checkpoint is waiting or being written. Any thread.
    bool busy() const;

private:
    void run();

    CheckpointStore &m_store;
    const std::string m_run;
    const int m_keep;
    Callbacks m_callbacks;
    mutable std::mutex m_mutex;
    std::condition_variable m_wake;
    std::condition_variable m_idle;
    std::optional<train::TrainingState> m_pending;
    bool m_busy = false;
    bool m_stopping = false;
    int64_t m_lastSaved = -1;
    std::thread m_thread;
};

} // namespace rookery::store
