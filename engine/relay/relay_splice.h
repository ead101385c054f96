// SPDX-License-Identifier: GPL-3.0-or-later
// One spliced pair: two sockets, a buffer per direction, bytes copied both ways.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <memory>
#include <string>

#include "engine/common/token_bucket.h"
#include "engine/relay/relay_impl.h"

namespace rookery::relay::detail {

/// Writes Paired to both sides, then copies each side's bytes to the other: read into
/// the direction's buffer, wait for the rate cap, write, read again, so a direction
/// holds at most one buffer. When one side ends, what was read from it is already
/// written; the other side gets a FIN and, once its own direction has flushed, both
/// sockets close. A pair with no bytes for idleTimeout is closed.
///
/// Thread safety: start() from any thread; everything else runs on the pair's strand.
class Splice : public std::enable_shared_from_this<Splice>
{
public:
    Splice(RelayServer::Impl &server, uint64_t id, std::array<std::string, 2> nodes,
           std::array<tcp::socket, 2> sockets);
    void start();

private:
    struct Direction
    {
        Direction(const Strand &strand, uint64_t rate, size_t bufferBytes)
            // Bursts of 50 ms worth (one buffer at least): a cap that holds over short spells too.
            : bucket(rate, std::max<uint64_t>(bufferBytes, rate / 20))
            , throttle(strand)
            , buffer(new uint8_t[bufferBytes])
        { }
        TokenBucket bucket;
        asio::steady_timer throttle;
        std::unique_ptr<uint8_t[]> buffer;
        uint64_t bytes = 0;
        bool busy = false; // between a read's completion and its write's
    };

    void onPairedSent(const boost::system::error_code &ec);
    void read(int d);
    void onRead(int d, const boost::system::error_code &ec, size_t n);
    void write(int d, size_t n);
    void onWrite(int d, const boost::system::error_code &ec);
    void sourceEnded(int d, const boost::system::error_code &ec);
    void armIdle();
    void closeAll(const std::string &why);

    RelayServer::Impl &m_server;
    Strand m_strand;
    uint64_t m_id;
    std::array<std::string, 2> m_nodes;
    std::array<tcp::socket, 2> m_sockets;
    std::array<Direction, 2> m_dirs; // [d] carries m_sockets[d] -> m_sockets[1 - d]
    asio::steady_timer m_idle;
    std::chrono::steady_clock::time_point m_opened, m_lastActivity;
    int m_pairedSent = 0;
    bool m_closing = false, m_closed = false;
    std::string m_why;
};

} // namespace rookery::relay::detail
