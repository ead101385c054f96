// SPDX-License-Identifier: GPL-3.0-or-later
// Before the splice: reading the 24-byte greeting, matching tokens, waiting for the
// partner, and the refusals. Everything here runs on the relay's `pairing` strand.
#include <algorithm>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include "engine/common/log.h"
#include "engine/net/tcp_listen.h"
#include "engine/relay/relay_impl.h"
#include "engine/relay/relay_splice.h"

namespace rookery::relay {

using namespace detail;

namespace detail {

PendingConnection::PendingConnection(RelayServer::Impl &s, tcp::socket &&sock)
    : server(s)
    , socket(std::move(sock))
    , timer(s.pairing)
{ }

void PendingConnection::start()
{
    timer.expires_after(server.settings.preambleTimeout);
    timer.async_wait([self = shared_from_this()](const boost::system::error_code &ec) {
        if (ec || self->state != State::Greeting)
            return;
        log::debug(kArea, "closed " + self->peerText() + ": no greeting in time");
        self->close();
    });
    asio::async_read(
        socket, asio::buffer(greeting),
        asio::bind_executor(server.pairing, [self = shared_from_this()](const boost::system::error_code &ec, size_t) {
            self->onGreeting(ec);
        }));
}

void PendingConnection::onGreeting(const boost::system::error_code &ec)
{
    timer.cancel();
    server.leavePending(*this);
    if (state != State::Greeting)
        return; // timed out
    if (ec) {
        log::debug(kArea, "connection closed before its greeting: " + ec.message());
        return close();
    }
    if (!std::equal(kRelayMagic.begin(), kRelayMagic.end(), greeting.begin()))
        return refuse(RelayReply::UnknownToken, "its greeting is not the relay's");
    Token token{};
    std::copy(greeting.begin() + kRelayMagic.size(), greeting.end(), token.begin());
    server.arrive(shared_from_this(), token);
}

void PendingConnection::waitForPartner(const std::shared_ptr<PairRecord> &r, int s)
{
    state = State::Waiting;
    record = r;
    side = s;
    // Readable while waiting means either early bytes for the partner (left in the socket
    // for the splice) or a hang-up; onReadable() tells them apart.
    socket.async_wait(
        tcp::socket::wait_read,
        asio::bind_executor(server.pairing, [self = shared_from_this()](const boost::system::error_code &ec) {
            self->onReadable(ec);
        }));
}

void PendingConnection::onReadable(const boost::system::error_code &ec)
{
    if (ec || state != State::Waiting)
        return;
    uint8_t byte = 0;
    boost::system::error_code peekEc;
    socket.non_blocking(true, peekEc);
    const size_t n = socket.receive(asio::buffer(&byte, 1), tcp::socket::message_peek, peekEc);
    if (peekEc == asio::error::would_block)
        return waitForPartner(record.lock(), side); // a spurious wake-up
    if (!peekEc && n > 0)
        return; // early bytes: the splice carries them; stop watching (the wait would fire again at once)
    log::info(kArea, peerText() + " left before its partner arrived");
    server.partnerLeft(*this);
    close();
}

void PendingConnection::refuse(RelayReply reply, const std::string &reason)
{
    static constexpr std::array<uint8_t, 4> kCodes{0, 1, 2, 3};
    ++server.refused;
    log::warning(kArea, "refused " + peerText() + ": " + reason);
    state = State::Closed;
    timer.cancel();
    boost::system::error_code ignored;
    socket.cancel(ignored);
    asio::async_write(
        socket, asio::buffer(&kCodes[size_t(reply)], 1),
        asio::bind_executor(server.pairing, [self = shared_from_this()](const boost::system::error_code &, size_t) {
            boost::system::error_code e;
            self->socket.shutdown(tcp::socket::shutdown_both, e);
            self->socket.close(e);
        }));
}

void PendingConnection::close()
{
    state = State::Closed;
    timer.cancel();
    boost::system::error_code ignored;
    socket.close(ignored);
}

std::string PendingConnection::peerText() const
{
    boost::system::error_code ec;
    const auto endpoint = socket.remote_endpoint(ec);
    return ec ? std::string("a connection") : net::endpointText(endpoint);
}

} // namespace detail

void RelayServer::Impl::arrive(const std::shared_ptr<PendingConnection> &conn, const Token &token)
{
    std::unique_lock lock(mutex);
    const auto it = tokens.find(token);
    if (it == tokens.end()) {
        lock.unlock();
        return conn->refuse(RelayReply::UnknownToken, "unknown, used or expired token");
    }
    const auto [record, side] = it->second;
    tokens.erase(it); // single use, whatever happens next
    if (record->partnerLeft) {
        record->done = true;
        record->deadline.cancel();
        releaseLocked(record->nodes);
        lock.unlock();
        return conn->refuse(RelayReply::PartnerMissing, "its partner " + record->nodes[1 - side] + " came and left");
    }
    auto other = record->waiting[1 - side];
    if (!other) {
        record->waiting[side] = conn;
        lock.unlock();
        log::debug(kArea, "pair " + std::to_string(record->id) + ": " + record->nodes[side] + " waits for " +
                              record->nodes[1 - side]);
        return conn->waitForPartner(record, side);
    }
    record->done = true;
    record->deadline.cancel();
    record->waiting = {};
    ++pairsOpened;
    ++pairsActive;
    lock.unlock();

    // Both sockets are the pairing strand's until here; the splice takes them over.
    other->state = PendingConnection::State::Handed;
    conn->state = PendingConnection::State::Handed;
    boost::system::error_code ignored;
    other->socket.cancel(ignored);
    std::array<tcp::socket, 2> sockets =
        side == 0 ? std::array<tcp::socket, 2>{std::move(conn->socket), std::move(other->socket)}
                  : std::array<tcp::socket, 2>{std::move(other->socket), std::move(conn->socket)};
    log::info(kArea,
              "pair " + std::to_string(record->id) + " opened: " + record->nodes[0] + " <-> " + record->nodes[1]);
    std::make_shared<Splice>(*this, record->id, record->nodes, std::move(sockets))->start();
}

void RelayServer::Impl::partnerLeft(const PendingConnection &conn)
{
    const auto record = conn.record.lock();
    std::lock_guard lock(mutex);
    if (!record || record->done)
        return;
    record->waiting[conn.side] = nullptr;
    record->partnerLeft = true;
}

void RelayServer::Impl::expire(const std::shared_ptr<PairRecord> &record)
{
    std::array<std::shared_ptr<PendingConnection>, 2> waiting;
    {
        std::lock_guard lock(mutex);
        if (record->done)
            return;
        record->done = true;
        for (const auto &token : record->tokens)
            tokens.erase(token);
        releaseLocked(record->nodes);
        waiting.swap(record->waiting);
    }
    bool anyone = false;
    for (int side = 0; side < 2; ++side) {
        if (!waiting[side])
            continue;
        anyone = true;
        waiting[side]->refuse(RelayReply::PartnerMissing,
                              "its partner " + record->nodes[1 - side] + " did not arrive within the pair timeout");
    }
    if (!anyone)
        log::info(kArea, "pair " + std::to_string(record->id) + " (" + record->nodes[0] + " <-> " + record->nodes[1] +
                             ") expired with no node waiting");
}

} // namespace rookery::relay
