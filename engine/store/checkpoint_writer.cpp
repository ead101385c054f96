// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/store/checkpoint_writer.h"

#include "engine/common/log.h"

namespace rookery::store {

CheckpointWriter::CheckpointWriter(CheckpointStore &store, std::string run, int keepNewest, Callbacks callbacks)
    : m_store(store)
    , m_run(std::move(run))
    , m_keep(keepNewest)
    , m_callbacks(std::move(callbacks))
    , m_thread([this] { this->run(); })
{ }

CheckpointWriter::~CheckpointWriter()
{
    {
        std::lock_guard lock(m_mutex);
        m_stopping = true;
    }
    m_wake.notify_all();
    m_thread.join();
}

void CheckpointWriter::submit(train::TrainingState state)
{
    {
        std::lock_guard lock(m_mutex);
        m_pending = std::move(state);
    }
    m_wake.notify_one();
}

void CheckpointWriter::flush()
{
    std::unique_lock lock(m_mutex);
    m_idle.wait(lock, [this] { return !m_pending && !m_busy; });
}

bool CheckpointWriter::busy() const
{
    std::lock_guard lock(m_mutex);
    return m_pending.has_value() || m_busy;
}

int64_t CheckpointWriter::lastSavedStep() const
{
    std::lock_guard lock(m_mutex);
    return m_lastSaved;
}

void CheckpointWriter::run()
{
    std::unique_lock lock(m_mutex);
    for (;;) {
        m_wake.wait(lock, [this] { return m_pending || m_stopping; });
        if (!m_pending)
            return; // stopping with nothing left
        train::TrainingState state = std::move(*m_pending);
        m_pending.reset();
        m_busy = true;
        lock.unlock();
        if (m_callbacks.started)
            m_callbacks.started(state.step);
        try {
            const int64_t id = m_store.save(m_run, state, m_keep);
            CheckpointInfo info{id, m_run, state.step, 0, state.model.name, 0};
            if (m_callbacks.saved)
                m_callbacks.saved(info);
            lock.lock();
            m_lastSaved = state.step;
        } catch (const std::exception &e) {
            log::error("store",
                       std::string("checkpoint at step ") + std::to_string(state.step) + " failed: " + e.what());
            if (m_callbacks.failed)
                m_callbacks.failed(e.what());
            lock.lock();
        }
        m_busy = false;
        m_idle.notify_all();
    }
}

} // namespace rookery::store
