// SPDX-License-Identifier: GPL-3.0-or-later
// Inside the port mapper: the two ways to ask a router (UPnP IGD, NAT-PMP) behind one
// interface, and the pure rules the mapper follows (error texts, candidate ports,
// renewal times). Not for use outside engine/net and its tests.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/net/port_mapping.h"

namespace rookery::net::port_mapping {

/// What one attempt with one method came to.
struct Outcome
{
    enum class Kind {
        Mapped,   ///< the router forwards the port
        NoRouter, ///< nobody answered: no such router, or the protocol is off in it
        Refused   ///< a router answered and said no, or answered nonsense
    };
    Kind kind = Kind::NoRouter;
    std::string externalAddress;
    uint16_t externalPort = 0;
    std::chrono::seconds lease{0}; ///< as granted; 0 = permanent
    std::string detail;            ///< for NoRouter/Refused: what exactly, for the error sentence
};

/// One protocol's hold on one mapping. Used only on the mapper's thread.
class Method
{
public:
    virtual ~Method() = default;
    virtual const char *name() const = 0;
    /// Finds the router and maps the port. `stopping` is polled between bounded waits.
    virtual Outcome map(const std::function<bool()> &stopping) = 0;
    /// Asks again for the mapping `map` made, before its lease ends.
    virtual Outcome renew(const std::function<bool()> &stopping) = 0;
    /// Deletes the mapping; bounded, best effort (the router may be gone).
    virtual void remove() = 0;
};

std::unique_ptr<Method> makeUpnpMethod(const PortMappingSettings &settings);
std::unique_ptr<Method> makeNatPmpMethod(const PortMappingSettings &settings);

// ---- Pure rules, unit-tested without a router ----

/// "ConflictInMappingEntry (718)"; library failures (negative codes) as short phrases.
std::string describeUpnpError(int code);

/// True for the answers that mean "this external port is taken": try another one.
bool isUpnpConflict(int code);

/// The external ports to ask for, in order: the internal port itself, then its next
/// neighbours (a second Rookery node in the same home gets port+1), skipping port 0 and
/// wrapping from 65535 to 1024. Never more than `count`, no duplicates.
std::vector<uint16_t> candidateExternalPorts(uint16_t internalPort, size_t count);

/// The NAT-PMP library's result codes as phrases: "the router does not allow it (2)".
std::string describeNatPmpError(int code);

/// When to renew a mapping granted for `lease`: at half of it, not sooner than 1 s
/// after; a permanent lease (0) is checked every 30 minutes.
std::chrono::seconds renewalDelay(std::chrono::seconds lease);

/// "2 s", "1.5 s", "250 ms".
std::string formatDuration(std::chrono::milliseconds d);

/// The user-facing sentence for a failure, given what each method came to.
std::string failureSentence(const PortMappingSettings &settings, const Outcome &upnp, const Outcome &natPmp);

} // namespace rookery::net::port_mapping
