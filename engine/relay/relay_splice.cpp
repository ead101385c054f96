// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/relay/relay_splice.h"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/write.hpp>

#include "engine/common/log.h"

namespace rookery::relay::detail {

using Clock = std::chrono::steady_clock;

Splice::Splice(RelayServer::Impl &server, uint64_t id, std::array<std::string, 2> nodes,
               std::array<tcp::socket, 2> sockets)
    : m_server(server)
    , m_strand(asio::make_strand(server.ioc))
    , m_id(id)
    , m_nodes(std::move(nodes))
    , m_sockets(std::move(sockets))
    , m_dirs{Direction(m_strand, server.settings.bytesPerSecondPerPair, server.settings.bufferBytes),
             Direction(m_strand, server.settings.bytesPerSecondPerPair, server.settings.bufferBytes)}
    , m_idle(m_strand)
    , m_opened(Clock::now())
    , m_lastActivity(m_opened)
{
    for (auto &s : m_sockets) {
        boost::system::error_code ignored;
        s.set_option(tcp::no_delay(true), ignored); // TLS records pass as they come, not after Nagle's wait
    }
}

void Splice::start()
{
    asio::dispatch(m_strand, [self = shared_from_this()] {
        static constexpr uint8_t kPaired = uint8_t(RelayReply::Paired);
        for (auto &s : self->m_sockets)
            asio::async_write(s, asio::buffer(&kPaired, 1),
                              asio::bind_executor(self->m_strand, [self](const boost::system::error_code &ec, size_t) {
                                  self->onPairedSent(ec);
                              }));
        self->armIdle();
    });
}

void Splice::onPairedSent(const boost::system::error_code &ec)
{
    if (m_closed)
        return;
    if (ec)
        return closeAll("a node hung up before pairing: " + ec.message());
    if (++m_pairedSent == 2) {
        read(0);
        read(1);
    }
}

void Splice::read(int d)
{
    m_sockets[d].async_read_some(
        asio::buffer(m_dirs[d].buffer.get(), m_server.settings.bufferBytes),
        asio::bind_executor(m_strand, [self = shared_from_this(), d](const boost::system::error_code &ec, size_t n) {
            self->onRead(d, ec, n);
        }));
}

void Splice::onRead(int d, const boost::system::error_code &ec, size_t n)
{
    if (m_closed)
        return;
    if (ec)
        return sourceEnded(d, ec);
    auto &dir = m_dirs[d];
    m_lastActivity = Clock::now();
    dir.bytes += n;
    m_server.bytesRelayed += n;
    if (const auto tap = m_server.currentTap())
        (*tap)(dir.buffer.get(), n);
    dir.busy = true;
    const auto wait = dir.bucket.reserve(n);
    if (wait.count() <= 0)
        return write(d, n);
    dir.throttle.expires_after(wait);
    dir.throttle.async_wait([self = shared_from_this(), d, n](const boost::system::error_code &e) {
        if (!e && !self->m_closed)
            self->write(d, n);
    });
}

void Splice::write(int d, size_t n)
{
    asio::async_write(m_sockets[1 - d], asio::buffer(m_dirs[d].buffer.get(), n),
                      asio::bind_executor(m_strand, [self = shared_from_this(), d](const boost::system::error_code &ec,
                                                                                   size_t) { self->onWrite(d, ec); }));
}

void Splice::onWrite(int d, const boost::system::error_code &ec)
{
    m_dirs[d].busy = false;
    if (m_closed)
        return;
    if (ec)
        return closeAll(m_nodes[1 - d] + " stopped taking bytes: " + ec.message());
    if (m_closing)
        return closeAll(m_why); // the other side had ended; this was the last of what we held
    read(d);
}

void Splice::sourceEnded(int d, const boost::system::error_code &ec)
{
    if (!m_closing) {
        m_closing = true;
        m_why = ec == asio::error::eof ? m_nodes[d] + " closed" : m_nodes[d] + "'s connection broke: " + ec.message();
        // Everything read from `d` is written already (a direction reads only after its
        // write): the FIN follows the last byte.
        boost::system::error_code ignored;
        m_sockets[1 - d].shutdown(tcp::socket::shutdown_send, ignored);
    }
    if (!m_dirs[1 - d].busy)
        closeAll(m_why); // the other direction holds nothing: its pending read just ends
}

void Splice::armIdle()
{
    m_idle.expires_at(m_lastActivity + m_server.settings.idleTimeout);
    m_idle.async_wait([self = shared_from_this()](const boost::system::error_code &ec) {
        if (ec || self->m_closed)
            return;
        if (Clock::now() - self->m_lastActivity >= self->m_server.settings.idleTimeout)
            return self->closeAll("idle for " + std::to_string(self->m_server.settings.idleTimeout.count()) + " ms");
        self->armIdle();
    });
}

void Splice::closeAll(const std::string &why)
{
    if (m_closed)
        return;
    m_closed = true;
    m_idle.cancel();
    for (int d = 0; d < 2; ++d) {
        m_dirs[d].throttle.cancel();
        boost::system::error_code ignored;
        m_sockets[d].shutdown(tcp::socket::shutdown_both, ignored);
        m_sockets[d].close(ignored);
    }
    m_server.pairClosed(m_nodes);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - m_opened).count();
    log::info(kArea, "pair " + std::to_string(m_id) + " closed (" + why + ") after " + std::to_string(ms) + " ms" +
                         ": " + std::to_string(m_dirs[0].bytes) + " bytes " + m_nodes[0] + " -> " + m_nodes[1] + ", " +
                         std::to_string(m_dirs[1].bytes) + " bytes " + m_nodes[1] + " -> " + m_nodes[0]);
}

} // namespace rookery::relay::detail
