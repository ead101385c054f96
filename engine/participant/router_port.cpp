// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/participant/router_port.h"

#include <condition_variable>
#include <mutex>

#include "engine/net/port_mapping.h"

namespace rookery::participant {

using MapState = net::PortMappingStatus::State;

struct RouterPort::State
{
    std::mutex mutex;
    std::condition_variable answered;
    net::PortMappingStatus status;
    std::function<void(const std::string &)> say;
};

namespace {

std::string describe(const net::PortMappingStatus &s, uint16_t port)
{
    switch (s.state) {
    case MapState::Mapped:
        return "port mapping: the router forwards " + s.externalAddress + ":" + std::to_string(s.externalPort) +
               " to this node's peer port " + std::to_string(port) + " (" + s.method + ")";
    case MapState::Failed:
        return "port mapping failed: " + s.error;
    default:
        return {};
    }
}

} // namespace

RouterPort::RouterPort(uint16_t port, std::chrono::milliseconds wait, std::function<void(const std::string &)> say)
    : m_state(std::make_shared<State>())
{
    m_state->say = std::move(say);
    net::PortMappingSettings s;
    s.internalPort = port;
    s.description = "Rookery peer port " + std::to_string(port);
    m_mapper = std::make_unique<net::PortMapper>(s, [state = m_state, port](const net::PortMappingStatus &st) {
        {
            std::lock_guard lock(state->mutex);
            state->status = st;
        }
        state->answered.notify_all();
        if (const std::string text = describe(st, port); !text.empty() && state->say)
            state->say(text);
    });
    std::unique_lock lock(m_state->mutex);
    m_state->answered.wait_for(lock, wait, [this] {
        return m_state->status.state == MapState::Mapped || m_state->status.state == MapState::Failed;
    });
}

RouterPort::~RouterPort() = default;

std::string RouterPort::advertised(const std::string &fallback) const
{
    std::lock_guard lock(m_state->mutex);
    const auto &s = m_state->status;
    if (s.state != MapState::Mapped || s.externalAddress.empty() || s.externalPort == 0)
        return fallback;
    return s.externalAddress + ":" + std::to_string(s.externalPort);
}

} // namespace rookery::participant
