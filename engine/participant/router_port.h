// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace rookery::net {
class PortMapper;
}

namespace rookery::participant {

/// The node's peer port forwarded on its home router (UPnP IGD, then NAT-PMP) for as
/// long as this lives: renewed meanwhile, removed at the end (net::PortMapper).
///
/// Thread safety: advertised() from any thread; `say` is called on the mapper's thread.
class RouterPort
{
public:
    /// Asks the router to forward `port` and waits up to `wait` for its answer.
    RouterPort(uint16_t port, std::chrono::milliseconds wait, std::function<void(const std::string &)> say);
    ~RouterPort(); ///< removes the mapping (bounded: a few seconds when the router is gone)

    /// "external-address:port" once the router forwards the port; `fallback` otherwise.
    std::string advertised(const std::string &fallback) const;

private:
    struct State;
    std::shared_ptr<State> m_state;
    std::unique_ptr<net::PortMapper> m_mapper;
};

} // namespace rookery::participant
