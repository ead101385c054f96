// SPDX-License-Identifier: GPL-3.0-or-later
// bench_relay's second half: the same comparison over our real links (TLS 1.3 WebSocket
// with mutual certificates, as between two nodes), direct through a listener and
// relayed through relay::RelayServer, both on loopback in one process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace rookery::relay {
class RelayServer;
}

namespace rookery::bench {

struct LinkFigures
{
    double bytesPerSecond = 0;      ///< tensor payload delivered one way
    std::vector<double> roundTrips; ///< microseconds, small messages echoed back; sorted
};

/// `messages` Activations of `messageBytes` each one way, then `pings` round trips of a
/// small one; over a direct link, or relayed through `relay` when it is given.
LinkFigures measureLink(relay::RelayServer *relay, int messages, size_t messageBytes, int pings);

} // namespace rookery::bench
