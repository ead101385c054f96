// SPDX-License-Identifier: GPL-3.0-or-later
// Accepting connections and registering pairs. The greeting and the pairing are in
// relay_pairing.cpp, the copying in relay_splice.cpp.
#include "engine/relay/relay_server.h"

#include <algorithm>

#include <openssl/rand.h>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include "engine/common/error.h"
#include "engine/common/log.h"
#include "engine/net/tcp_listen.h"
#include "engine/relay/relay_impl.h"

namespace rookery::relay {

using namespace detail;

RelayServer::Impl::Impl(RelaySettings s)
    : settings(std::move(s))
    , work(ioc.get_executor())
    , pairing(ioc.get_executor())
    , acceptor(ioc)
    , acceptRetry(pairing)
{
    settings.threads = std::max(1, settings.threads);
    settings.bufferBytes = std::max<size_t>(1024, settings.bufferBytes);
    const tcp::endpoint endpoint(net::bindAddress(settings.bindAddress, "relay"), settings.port);
    port = net::listenOn(acceptor, endpoint, "relay");
}

void RelayServer::Impl::startThreads()
{
    for (int i = 0; i < settings.threads; ++i)
        threads.emplace_back([this] { ioc.run(); });
    asio::post(pairing, [this] { accept(); });
}

void RelayServer::Impl::stop()
{
    work.reset();
    ioc.stop();
    for (auto &t : threads)
        t.join();
    threads.clear();
    if (pairsActive > 0)
        log::info(kArea, "relay stopped: closing " + std::to_string(pairsActive.load()) + " spliced pairs");
    // The io_context's handlers own the connections and spliced pairs; they go with it.
    // What the tables hold goes here, while the io_context still stands.
    std::lock_guard lock(mutex);
    for (auto &[token, entry] : tokens)
        entry.first->waiting = {};
    tokens.clear();
    boost::system::error_code ignored;
    acceptor.close(ignored);
}

void RelayServer::Impl::accept()
{
    acceptor.async_accept(asio::bind_executor(
        pairing, [this](const boost::system::error_code &ec, tcp::socket socket) { onAccept(ec, std::move(socket)); }));
}

void RelayServer::Impl::onAccept(const boost::system::error_code &ec, tcp::socket socket)
{
    if (ec == asio::error::operation_aborted)
        return;
    if (ec) { // out of file descriptors, most likely: try again soon rather than spin
        log::warning(kArea, "cannot accept a connection: " + ec.message());
        acceptRetry.expires_after(std::chrono::milliseconds(200));
        acceptRetry.async_wait([this](const boost::system::error_code &e) {
            if (!e)
                accept();
        });
        return;
    }
    boost::system::error_code addressError;
    const auto from = socket.remote_endpoint(addressError).address();
    std::string full;
    {
        std::lock_guard lock(mutex);
        if (pending >= settings.maxPendingConnections) {
            full = std::to_string(settings.maxPendingConnections) + " connections are still greeting";
        } else if (settings.maxPendingPerAddress > 0 && !addressError &&
                   pendingPerAddress[from] >= settings.maxPendingPerAddress) {
            full = std::to_string(settings.maxPendingPerAddress) + " connections from " + from.to_string() +
                   " are still greeting";
        } else {
            ++pending;
            ++pendingPerAddress[from];
        }
    }
    if (!full.empty()) {
        ++refused; // before the reply, so that whoever reads the reply sees the count
        // No state for it: one byte into an empty send buffer never blocks.
        boost::system::error_code ignored;
        static constexpr uint8_t kFull = uint8_t(RelayReply::Full);
        socket.non_blocking(true, ignored);
        socket.write_some(asio::buffer(&kFull, 1), ignored);
        socket.close(ignored);
        log::warning(kArea, "refused a connection: " + full);
    } else {
        auto conn = std::make_shared<PendingConnection>(*this, std::move(socket));
        conn->address = from;
        conn->start();
    }
    accept();
}

void RelayServer::Impl::leavePending(PendingConnection &conn)
{
    if (!conn.counted)
        return;
    conn.counted = false;
    std::lock_guard lock(mutex);
    --pending;
    if (auto it = pendingPerAddress.find(conn.address); it != pendingPerAddress.end() && --it->second == 0)
        pendingPerAddress.erase(it);
}

void RelayServer::Impl::releaseLocked(const std::array<std::string, 2> &nodes)
{
    --pairs;
    for (const auto &node : nodes) {
        auto it = pairsPerNode.find(node);
        if (it != pairsPerNode.end() && --it->second == 0)
            pairsPerNode.erase(it);
    }
}

void RelayServer::Impl::pairClosed(const std::array<std::string, 2> &nodes)
{
    std::lock_guard lock(mutex);
    releaseLocked(nodes);
    --pairsActive;
}

std::shared_ptr<const RelayServer::Tap> RelayServer::Impl::currentTap() const
{
    std::lock_guard lock(tapMutex);
    return tap;
}

RelayServer::RelayServer(RelaySettings settings)
    : m(std::make_unique<Impl>(std::move(settings)))
{
    m->startThreads();
    log::info(kArea, "relay listening on port " + std::to_string(m->port));
}

RelayServer::~RelayServer() { m->stop(); }

uint16_t RelayServer::port() const { return m->port; }

std::pair<Token, Token> RelayServer::expectPair(const std::string &aNodeId, const std::string &bNodeId)
{
    return expectPair(aNodeId, bNodeId, std::nullopt);
}

void RelayServer::expectPair(const std::string &aNodeId, const std::string &bNodeId, const Token &aToken,
                             const Token &bToken)
{
    expectPair(aNodeId, bNodeId, std::make_pair(aToken, bToken));
}

std::pair<Token, Token> RelayServer::expectPair(const std::string &aNodeId, const std::string &bNodeId,
                                                const std::optional<std::pair<Token, Token>> &given)
{
    if (aNodeId == bNodeId)
        throw Error("cannot relay node '" + aNodeId + "' to itself");
    std::lock_guard lock(m->mutex);
    const auto refuse = [](const std::string &sentence) {
        log::warning(kArea, sentence);
        throw Error(sentence);
    };
    if (m->pairs >= m->settings.maxPairs)
        refuse("cannot relay another pair: the relay is full (" + std::to_string(m->pairs) + " pairs, its limit is " +
               std::to_string(m->settings.maxPairs) + ")");
    for (const auto *node : {&aNodeId, &bNodeId}) {
        const auto it = m->pairsPerNode.find(*node);
        if (it != m->pairsPerNode.end() && it->second >= m->settings.maxPairsPerNode)
            refuse("cannot relay another pair for node '" + *node + "': it already has " + std::to_string(it->second) +
                   " relayed pairs, the most one node may have");
    }
    if (given && (given->first == given->second || m->tokens.count(given->first) || m->tokens.count(given->second)))
        refuse("cannot relay a pair whose tokens are the same or already in use");
    auto record = std::make_shared<PairRecord>(m->pairing);
    record->id = m->nextPairId++;
    record->nodes = {aNodeId, bNodeId};
    if (given) {
        record->tokens = {given->first, given->second};
    } else {
        for (int side = 0; side < 2; ++side) {
            do
                record->tokens[side] = randomToken();
            while (m->tokens.count(record->tokens[side]) || (side == 1 && record->tokens[1] == record->tokens[0]));
        }
    }
    for (int side = 0; side < 2; ++side)
        m->tokens.emplace(record->tokens[side], std::make_pair(record, side));
    ++m->pairs;
    ++m->pairsPerNode[aNodeId];
    ++m->pairsPerNode[bNodeId];
    // The timer is touched only under the mutex (here, in arrive() and in expire()).
    record->deadline.expires_after(m->settings.pairTimeout);
    record->deadline.async_wait([impl = m.get(), record](const boost::system::error_code &ec) {
        if (!ec)
            impl->expire(record);
    });
    log::debug(kArea, "pair " + std::to_string(record->id) + " registered: " + aNodeId + " <-> " + bNodeId);
    return {record->tokens[0], record->tokens[1]};
}

RelayCounters RelayServer::counters() const
{
    RelayCounters c;
    c.bytesRelayed = m->bytesRelayed;
    c.pairsOpened = m->pairsOpened;
    c.pairsActive = m->pairsActive;
    c.refused = m->refused;
    return c;
}

void RelayServer::setTap(Tap tap)
{
    auto shared = tap ? std::make_shared<const Tap>(std::move(tap)) : nullptr;
    std::lock_guard lock(m->tapMutex);
    m->tap = std::move(shared);
}

} // namespace rookery::relay
