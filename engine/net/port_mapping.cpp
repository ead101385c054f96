// SPDX-License-Identifier: GPL-3.0-or-later
// The port mapper's thread: find a router, map, renew at half the lease, remap when a
// renewal fails, retry later when nothing worked, remove the mapping at the end.
#include "engine/net/port_mapping.h"

#include <condition_variable>
#include <mutex>
#include <thread>

#include "engine/net/port_mapping_methods.h"

namespace rookery::net {

using namespace std::chrono_literals;
using port_mapping::Method;
using port_mapping::Outcome;
using State = PortMappingStatus::State;

namespace {

// How long the destructor waits for the removal. miniupnpc's own socket timeouts are a
// few seconds each; past this, the thread finishes (or gives up) without us.
constexpr auto kStopBudget = 3s;

} // namespace

const char *toString(PortMappingStatus::State state)
{
    switch (state) {
    case State::Off:
        return "Off";
    case State::Discovering:
        return "Discovering";
    case State::Mapped:
        return "Mapped";
    case State::Failed:
        return "Failed";
    }
    return "?";
}

class PortMapper::Shared
{
public:
    Shared(PortMappingSettings settings, Changed changed)
        : m_settings(std::move(settings))
        , m_changed(std::move(changed))
    { }

    void run()
    {
        if (m_settings.internalPort == 0) {
            publish({State::Failed, {}, {}, 0, "there is no port to map: the node is not listening yet"});
        } else {
            keepMapped();
        }
        std::lock_guard lock(m_mutex);
        m_finished = true;
        m_wake.notify_all();
    }

    void stop()
    {
        std::lock_guard lock(m_mutex);
        m_stopping = true;
        m_wake.notify_all();
    }

    bool waitFinished(std::chrono::steady_clock::duration budget)
    {
        std::unique_lock lock(m_mutex);
        return m_wake.wait_for(lock, budget, [this] { return m_finished; });
    }

    // After this, no callback runs; waits for one that is running.
    void close()
    {
        std::lock_guard lock(m_callbackMutex);
        m_closed = true;
    }

    PortMappingStatus status() const
    {
        std::lock_guard lock(m_mutex);
        return m_status;
    }

private:
    void keepMapped()
    {
        const auto stopping = [this] { return isStopping(); };
        std::unique_ptr<Method> active;
        Outcome outcome;
        while (!isStopping()) {
            if (!active) {
                publish({State::Discovering, {}, {}, 0, {}});
                active = establish(&outcome);
                if (!active) {
                    if (!sleepFor(m_settings.retryAfterFailure))
                        break;
                    continue;
                }
            }
            publish({State::Mapped, active->name(), outcome.externalAddress, outcome.externalPort, {}});
            if (!sleepFor(port_mapping::renewalDelay(outcome.lease)))
                break;
            outcome = active->renew(stopping);
            if (outcome.kind != Outcome::Kind::Mapped)
                active.reset(); // find the router again, maybe another one
        }
        if (active)
            active->remove();
    }

    // Tries UPnP IGD, then NAT-PMP; publishes the failure when neither maps.
    std::unique_ptr<Method> establish(Outcome *mapped)
    {
        const auto stopping = [this] { return isStopping(); };
        auto upnp = port_mapping::makeUpnpMethod(m_settings);
        const Outcome byUpnp = upnp->map(stopping);
        if (byUpnp.kind == Outcome::Kind::Mapped) {
            *mapped = byUpnp;
            return upnp;
        }
        if (isStopping())
            return nullptr;
        auto natPmp = port_mapping::makeNatPmpMethod(m_settings);
        const Outcome byNatPmp = natPmp->map(stopping);
        if (byNatPmp.kind == Outcome::Kind::Mapped) {
            *mapped = byNatPmp;
            return natPmp;
        }
        if (isStopping())
            return nullptr;
        const bool upnpRefused = byUpnp.kind == Outcome::Kind::Refused;
        const bool natPmpRefused = byNatPmp.kind == Outcome::Kind::Refused;
        const std::string method = upnpRefused ? upnp->name() : natPmpRefused ? natPmp->name() : "";
        publish({State::Failed, method, {}, 0, port_mapping::failureSentence(m_settings, byUpnp, byNatPmp)});
        return nullptr;
    }

    bool isStopping() const
    {
        std::lock_guard lock(m_mutex);
        return m_stopping;
    }

    // False when woken to stop.
    bool sleepFor(std::chrono::seconds duration)
    {
        std::unique_lock lock(m_mutex);
        return !m_wake.wait_for(lock, duration, [this] { return m_stopping; });
    }

    void publish(const PortMappingStatus &status)
    {
        {
            std::lock_guard lock(m_mutex);
            if (m_status == status)
                return;
            m_status = status;
        }
        std::lock_guard lock(m_callbackMutex);
        if (!m_closed && m_changed)
            m_changed(status);
    }

    const PortMappingSettings m_settings;
    const Changed m_changed;
    mutable std::mutex m_mutex; // guards the fields below up to m_callbackMutex
    std::condition_variable m_wake;
    PortMappingStatus m_status;
    bool m_stopping = false;
    bool m_finished = false;
    std::mutex m_callbackMutex; // held while m_changed runs
    bool m_closed = false;
};

PortMapper::PortMapper(PortMappingSettings settings, Changed changed)
{
    if (!settings.enabled)
        return;
    m_shared = std::make_shared<Shared>(std::move(settings), std::move(changed));
    // The thread owns a reference, so a detached one (see the destructor) stays valid.
    m_thread = std::thread([shared = m_shared] { shared->run(); });
}

PortMapper::~PortMapper()
{
    if (!m_shared)
        return;
    m_shared->stop();
    const bool finished = m_shared->waitFinished(kStopBudget);
    m_shared->close();
    if (finished)
        m_thread.join();
    else
        m_thread.detach(); // stuck in a blocking miniupnpc call to a router that went away
}

PortMappingStatus PortMapper::status() const { return m_shared ? m_shared->status() : PortMappingStatus{}; }

} // namespace rookery::net
