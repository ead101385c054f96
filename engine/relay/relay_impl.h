// SPDX-License-Identifier: GPL-3.0-or-later
// The relay's insides, shared by relay_server.cpp (accepting, registering pairs),
// relay_pairing.cpp (reading greetings, matching tokens) and relay_splice.cpp (copying).
//
// Threads: everything before a pair is spliced (greetings, waiting connections, pair
// deadlines) runs on one strand, `pairing`; each spliced pair has a strand of its own.
// The tables below are guarded by `mutex` because expectPair() and counters() come
// from other threads.
#pragma once

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include "engine/relay/relay_server.h"

namespace rookery::relay {

namespace detail {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Strand = asio::strand<asio::io_context::executor_type>;

inline constexpr const char *kArea = "relay";

struct PendingConnection;

/// One pair from expectPair() until it is spliced or expires. Index 0 is node A.
struct PairRecord
{
    explicit PairRecord(const Strand &strand)
        : deadline(strand)
    { }

    uint64_t id = 0;
    std::array<Token, 2> tokens{};
    std::array<std::string, 2> nodes;
    std::array<std::shared_ptr<PendingConnection>, 2> waiting; ///< arrived, partner not yet
    bool partnerLeft = false;                                  ///< one side arrived and hung up before the other came
    bool done = false; ///< spliced or expired: no longer the pairing code's business
    asio::steady_timer deadline;
};

/// An accepted connection until its pair is spliced: a socket and a 24-byte buffer.
struct PendingConnection : std::enable_shared_from_this<PendingConnection>
{
    enum class State { Greeting, Waiting, Handed, Closed };

    PendingConnection(RelayServer::Impl &server, tcp::socket &&socket);

    void start();
    void onGreeting(const boost::system::error_code &ec);
    void waitForPartner(const std::shared_ptr<PairRecord> &record, int side);
    void onReadable(const boost::system::error_code &ec);
    /// Answers `reply`, logs a warning with `reason`, then closes.
    void refuse(RelayReply reply, const std::string &reason);
    void close();
    std::string peerText() const;

    RelayServer::Impl &server;
    tcp::socket socket;
    asio::steady_timer timer; ///< the greeting's deadline
    std::array<uint8_t, kRelayPreambleBytes> greeting{};
    State state = State::Greeting;
    bool counted = true;       ///< still counts against maxPendingConnections
    asio::ip::address address; ///< where it came from (maxPendingPerAddress)
    std::weak_ptr<PairRecord> record;
    int side = 0;
};

} // namespace detail

struct RelayServer::Impl
{
    explicit Impl(RelaySettings s);
    void startThreads();
    void stop();

    void accept();
    void onAccept(const boost::system::error_code &ec, detail::tcp::socket socket);
    /// A connection sent a well-formed greeting with `token`. On `pairing`.
    void arrive(const std::shared_ptr<detail::PendingConnection> &conn, const Token &token);
    /// A connection waiting for its partner hung up. On `pairing`.
    void partnerLeft(const detail::PendingConnection &conn);
    /// The pair's deadline passed. On `pairing`.
    void expire(const std::shared_ptr<detail::PairRecord> &record);
    /// A spliced pair closed: frees its slots. Any thread.
    void pairClosed(const std::array<std::string, 2> &nodes);
    void leavePending(detail::PendingConnection &conn);
    std::shared_ptr<const Tap> currentTap() const;

    // Needs `mutex`.
    void releaseLocked(const std::array<std::string, 2> &nodes);

    RelaySettings settings;
    detail::asio::io_context ioc; // first, so that it goes last: its handlers own connections
    detail::asio::executor_work_guard<detail::asio::io_context::executor_type> work;
    detail::Strand pairing;
    detail::tcp::acceptor acceptor;
    detail::asio::steady_timer acceptRetry;
    uint16_t port = 0;
    std::vector<std::thread> threads;

    mutable std::mutex mutex;
    std::map<Token, std::pair<std::shared_ptr<detail::PairRecord>, int>> tokens; // unused tokens
    std::map<std::string, size_t> pairsPerNode;                                  // registered and spliced
    size_t pairs = 0;                                                            // registered and spliced
    size_t pending = 0;                                                          // connections still greeting
    std::map<detail::asio::ip::address, size_t> pendingPerAddress;               // the same, by source address
    uint64_t nextPairId = 1;

    mutable std::mutex tapMutex;
    std::shared_ptr<const Tap> tap;

    std::atomic<uint64_t> bytesRelayed{0}, pairsOpened{0}, pairsActive{0}, refused{0};
};

} // namespace rookery::relay
