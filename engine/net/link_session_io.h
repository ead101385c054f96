// SPDX-License-Identifier: GPL-3.0-or-later
// Internal to engine/net: includes Boost.Beast. LinkSession<>'s read, write and close
// paths; included at the end of link_session_impl.h.
#pragma once

#include "engine/net/link_session.h"

namespace rookery::net {

// ---- Reading ---------------------------------------------------------------------

template <class NextLayer> void LinkSession<NextLayer>::readHead()
{
    if (m_staging.size() < detail::kStagingBytes)
        m_staging.resize(detail::kStagingBytes);
    m_ws.async_read_some(asio::buffer(m_staging.data() + m_staged, m_staging.size() - m_staged),
                         beast::bind_front_handler(&Self::onReadHead, self()));
}

template <class NextLayer> void LinkSession<NextLayer>::onReadHead(beast::error_code ec, size_t bytes)
{
    if (ec)
        return onError(ec, "reading");
    if (m_state.load() >= State::Closing)
        return;
    m_bytesReceived += bytes;
    m_staged += bytes;
    const bool done = m_ws.is_message_done();
    if (m_ws.got_text())
        return protocolError(WireError::MalformedHeader, "the peer sent a text message; frames are binary");
    if (m_headerEnd == 0) {
        if (m_staged < FrameDecoder::kPrefixBytes)
            return done ? protocolError(WireError::Truncated, "a frame of " + std::to_string(m_staged) + " bytes")
                        : readHead();
        m_headerEnd = m_decoder.headerEnd({m_staging.data(), m_staged});
        if (m_headerEnd == 0)
            return protocolError(m_decoder.error(), m_decoder.reason());
        if (m_headerEnd > m_staging.size()) // at most 4 + limits.maxHeaderBytes
            m_staging.resize(m_headerEnd);
    }
    if (m_staged < m_headerEnd)
        return done ? protocolError(WireError::Truncated, "the frame ends inside its header") : readHead();
    m_frameBytes = m_decoder.parseHeader({m_staging.data(), m_headerEnd});
    if (m_frameBytes == 0)
        return protocolError(m_decoder.error(), m_decoder.reason());
    if (m_staged > m_frameBytes)
        return protocolError(WireError::TrailingBytes,
                             std::string(m_decoder.messageName()) + ": the frame is longer than its header describes");
    // Only now, with the size checked against the limits, is the frame's buffer allocated.
    m_frame = detail::allocateFrame(m_frameBytes);
    std::memcpy(m_frame.get(), m_staging.data(), m_staged);
    m_have = m_staged;
    m_spans = m_decoder.tensorSpans();
    m_checksums.assign(m_spans.size(), 0);
    m_checked = 0;
    m_nextSpan = 0;
    checksumArrived();
    checkMessageEnd();
}

template <class NextLayer> void LinkSession<NextLayer>::checksumArrived()
{
    for (; m_nextSpan < m_spans.size(); ++m_nextSpan) {
        const auto &s = m_spans[m_nextSpan];
        const uint64_t from = std::max(m_checked, s.offset), to = std::min(m_have, s.offset + s.bytes);
        if (from < to)
            m_checksums[m_nextSpan] = crc32c({m_frame.get() + from, size_t(to - from)}, m_checksums[m_nextSpan]);
        if (m_have < s.offset + s.bytes)
            break;
    }
    m_checked = m_have;
}

template <class NextLayer> void LinkSession<NextLayer>::readBody()
{
    m_ws.async_read_some(asio::buffer(m_frame.get() + m_have, m_frameBytes - m_have),
                         beast::bind_front_handler(&Self::onReadBody, self()));
}

template <class NextLayer> void LinkSession<NextLayer>::onReadBody(beast::error_code ec, size_t bytes)
{
    if (ec)
        return onError(ec, "reading");
    if (m_state.load() >= State::Closing)
        return;
    m_bytesReceived += bytes;
    m_have += bytes;
    checksumArrived();
    checkMessageEnd();
}

template <class NextLayer> void LinkSession<NextLayer>::checkMessageEnd()
{
    const bool done = m_ws.is_message_done();
    if (m_have < m_frameBytes) {
        if (done)
            return protocolError(WireError::Truncated, std::string(m_decoder.messageName()) + ": the frame is " +
                                                           std::to_string(m_have) + " bytes, its header describes " +
                                                           std::to_string(m_frameBytes));
        return readBody();
    }
    if (done)
        return deliverFrame();
    // The frame is complete but the WebSocket message is not: anything more is too much.
    m_ws.async_read_some(asio::buffer(&m_trailer, 1), beast::bind_front_handler(&Self::onReadTrailer, self()));
}

template <class NextLayer> void LinkSession<NextLayer>::onReadTrailer(beast::error_code ec, size_t bytes)
{
    if (ec)
        return onError(ec, "reading");
    if (m_state.load() >= State::Closing)
        return;
    if (bytes > 0)
        return protocolError(WireError::TrailingBytes,
                             std::string(m_decoder.messageName()) + ": the frame is longer than its header describes");
    checkMessageEnd();
}

template <class NextLayer> void LinkSession<NextLayer>::deliverFrame()
{
    const uint64_t frameBytes = m_frameBytes;
    auto frame = std::move(m_frame);
    DecodeResult r = m_decoder.finish(frame, {frame.get(), size_t(frameBytes)}, m_checksums);
    frame.reset(); // the message's tensors hold it now, if they need it
    m_staged = m_headerEnd = 0;
    m_frameBytes = m_have = 0;
    if (m_staging.size() > detail::kStagingBytes) {
        m_staging.resize(detail::kStagingBytes);
        m_staging.shrink_to_fit();
    }
    if (!r.ok())
        return protocolError(r.error, r.reason);
    ++m_messagesReceived;
    dispatch(std::move(*r.message));
    afterFrame(frameBytes);
}

template <class NextLayer> void LinkSession<NextLayer>::dispatch(Message &&message)
{
    const State state = m_state.load();
    if (auto *bye = std::get_if<Goodbye>(&message)) {
        // The peer closes the WebSocket next; its reason is the one worth reporting.
        log::info("net", "link " + describe() + ": the peer says goodbye: " + bye->reason);
        m_peerGoodbye = std::move(*bye);
        return;
    }
    if (state == State::Handshaking) {
        if (m_setup.side == Side::Server && std::holds_alternative<Hello>(message))
            return onHello(std::get<Hello>(message));
        if (m_setup.side == Side::Client && std::holds_alternative<HelloAck>(message))
            return onHelloAck(std::get<HelloAck>(message));
        return protocolError(WireError::MalformedHeader,
                             std::string(messageName(message)) + " before the Hello exchange finished");
    }
    if (state != State::Open)
        return;
    if (std::holds_alternative<Hello>(message) || std::holds_alternative<HelloAck>(message))
        return protocolError(WireError::MalformedHeader, std::string(messageName(message)) + " on an open link");
    if (auto *ping = std::get_if<Ping>(&message)) {
        // Answer unless the queue is full: a peer that floods pings gets fewer pongs.
        auto pong = std::make_shared<EncodedFrame>(encodeFrame(Pong{ping->nonce}));
        const size_t bytes = pong->size();
        if (reserveQueue(bytes))
            enqueue(std::move(pong), bytes);
        return;
    }
    notify(m_setup.events.message, self(), std::move(message));
}

template <class NextLayer> void LinkSession<NextLayer>::afterFrame(uint64_t frameBytes)
{
    if (m_finished || m_state.load() >= State::Closing)
        return;
    const auto &bucket = m_setup.config.download;
    const auto wait = bucket ? bucket->reserve(frameBytes) : std::chrono::nanoseconds(0);
    if (wait.count() <= 0)
        return readHead();
    m_readWait.expires_after(wait);
    m_readWait.async_wait([self = self()](beast::error_code ec) {
        if (!ec && !self->m_finished)
            self->readHead();
    });
}

// ---- Writing ---------------------------------------------------------------------

template <class NextLayer> SendResult LinkSession<NextLayer>::send(const Message &message)
{
    if (m_state.load() != State::Open || m_closeRequested.load())
        return SendResult::NotOpen;
    // Checksums are left to the writer, which computes them chunk by chunk (startWrite).
    auto frame = std::make_shared<EncodedFrame>(encodeFrame(message, m_compression.load(), false));
    const uint64_t maxSend =
        m_setup.config.maxSendBytes ? m_setup.config.maxSendBytes : m_setup.config.limits.maxMessageBytes;
    if (frame->size() > maxSend)
        return SendResult::TooLarge;
    if (!reserveQueue(frame->size())) {
        if (!m_wantWritable.exchange(true)) // the queue may have drained meanwhile
            asio::post(m_ws.get_executor(), [self = self()] { self->checkWritable(); });
        return SendResult::QueueFull;
    }
    // Inline when called on the link's own thread (a handler answering a message): a
    // post would cost a trip through the io_context queue on every round trip.
    asio::dispatch(m_ws.get_executor(), [self = self(), frame = std::move(frame)]() mutable {
        const size_t bytes = frame->size();
        self->enqueue(std::move(frame), bytes);
    });
    return SendResult::Queued;
}

template <class NextLayer> bool LinkSession<NextLayer>::reserveQueue(size_t bytes)
{
    // Compare-and-swap loops: senders on several threads never overshoot the limits,
    // not even for a moment.
    const auto &c = m_setup.config;
    size_t messages = m_queuedMessages.load();
    do {
        if (messages >= c.maxQueuedMessages)
            return false;
    } while (!m_queuedMessages.compare_exchange_weak(messages, messages + 1));
    size_t queued = m_queuedBytes.load();
    do {
        if (queued > 0 && queued + bytes > c.maxQueuedBytes) {
            --m_queuedMessages;
            return false;
        }
    } while (!m_queuedBytes.compare_exchange_weak(queued, queued + bytes));
    return true;
}

template <class NextLayer> void LinkSession<NextLayer>::enqueue(Frame frame, size_t reserved)
{
    if (m_finished || m_closeStarted) {
        if (reserved) {
            m_queuedBytes -= reserved;
            --m_queuedMessages;
        }
        return;
    }
    m_queue.push_back({std::move(frame), reserved});
    if (!m_writing)
        writeNext();
}

template <class NextLayer> void LinkSession<NextLayer>::writeNext()
{
    m_writing = true;
    const auto &bucket = m_setup.config.upload;
    const auto wait = bucket ? bucket->reserve(m_queue.front().frame->size()) : std::chrono::nanoseconds(0);
    if (wait.count() <= 0)
        return startWrite();
    m_writeWait.expires_after(wait);
    m_writeWait.async_wait([self = self()](beast::error_code ec) {
        if (!ec && !self->m_finished)
            self->startWrite();
    });
}

template <class NextLayer> void LinkSession<NextLayer>::startWrite()
{
    // One WebSocket frame per chunk: each chunk is checksummed just before it goes, so
    // the encryption (and, from a client, the masking) finds it in cache.
    auto &frame = *m_queue.front().frame;
    m_writeBuffers.clear();
    for (const auto &piece : frame.nextChunk(detail::kWriteBufferBytes))
        m_writeBuffers.emplace_back(piece.data, piece.size);
    m_ws.async_write_some(frame.allHandedOut(), m_writeBuffers, beast::bind_front_handler(&Self::onWrite, self()));
}

template <class NextLayer> void LinkSession<NextLayer>::onWrite(beast::error_code ec, size_t bytes)
{
    if (ec)
        return onError(ec, "writing");
    m_bytesSent += bytes;
    if (!m_queue.front().frame->allHandedOut())
        return startWrite();
    const Queued done = std::move(m_queue.front());
    m_queue.pop_front();
    if (done.reserved) {
        m_queuedBytes -= done.reserved;
        --m_queuedMessages;
    }
    ++m_messagesSent;
    checkWritable();
    if (!m_queue.empty())
        return writeNext();
    m_writing = false;
    if (m_closeAfterDrain)
        startClose(m_closeInfo.fatal ? websocket::close_code::policy_error : websocket::close_code::normal,
                   m_closeReason);
}

template <class NextLayer> void LinkSession<NextLayer>::checkWritable()
{
    const auto &c = m_setup.config;
    if (m_wantWritable.load() && m_state.load() == State::Open && !m_closeRequested.load() &&
        m_queuedBytes.load() <= c.maxQueuedBytes / 2 && m_queuedMessages.load() <= c.maxQueuedMessages / 2) {
        m_wantWritable = false;
        notify(m_setup.events.writable, self());
    }
}

// ---- Closing ---------------------------------------------------------------------

template <class NextLayer> void LinkSession<NextLayer>::close(const std::string &reason)
{
    if (m_closeRequested.exchange(true))
        return;
    asio::post(m_ws.get_executor(), [self = self(), reason] { self->closeOnStrand(reason); });
}

template <class NextLayer> void LinkSession<NextLayer>::closeOnStrand(const std::string &reason)
{
    if (m_finished || m_state.load() == State::Closing)
        return;
    m_closeInfo = {reason, false, true, false, false};
    if (m_state.load() != State::Open) {
        if (m_webSocketUp)
            return startClose(websocket::close_code::normal, reason);
        return finish(m_closeInfo);
    }
    // Whatever was queued goes first, then Goodbye, then the WebSocket close.
    enqueue(std::make_shared<EncodedFrame>(encodeFrame(Goodbye{GoodbyeCode::Normal, reason})), 0);
    m_closeAfterDrain = true;
    m_closeReason = reason;
}

template <class NextLayer>
void LinkSession<NextLayer>::startClose(websocket::close_code code, const std::string &reason)
{
    if (m_finished || m_closeStarted)
        return;
    m_state = State::Closing;
    m_closeStarted = true;
    m_closeAfterDrain = false;
    // A close frame carries at most 123 bytes of reason.
    websocket::close_reason cr(code, beast::string_view(reason.data(), std::min<size_t>(reason.size(), 123)));
    m_ws.async_close(cr, [self = self()](beast::error_code) { self->finish(self->m_closeInfo); });
}

template <class NextLayer> void LinkSession<NextLayer>::protocolError(WireError error, const std::string &reason)
{
    if (m_finished || m_closeStarted)
        return;
    const std::string text = std::string(wireErrorName(error)) + ": " + reason;
    log::warning("net", "link " + describe() + " closing: " + text);
    m_closeInfo = {text, false, false, false, false};
    dropQueued();
    startClose(detail::closeCodeFor(error), text);
}

template <class NextLayer> void LinkSession<NextLayer>::onError(beast::error_code ec, const char *stage)
{
    if (m_finished)
        return;
    if (m_closeStarted && ec != beast::error::timeout)
        return; // our close is under way; its handler finishes
    CloseInfo info;
    info.byPeer = true;
    if (ec == websocket::error::closed) {
        const auto &cr = m_ws.reason();
        info.clean = cr.code == websocket::close_code::normal || cr.code == websocket::close_code::going_away;
        info.reason =
            "closed by the peer" + (cr.reason.empty() ? "" : ": " + std::string(cr.reason.data(), cr.reason.size()));
    } else if (ec == beast::error::timeout) {
        info.reason = std::string(stage) + " timed out: no traffic from the peer for " +
                      detail::millis(m_setup.config.idleTimeout);
    } else if (!m_verifyFailure.empty()) {
        // A certificate out of date is renewed by its holder (peers renew at half their
        // certificate's life): a later try may succeed, so it is not fatal.
        info = {"TLS handshake refused: " + m_verifyFailure, false, false, !m_verifyOutOfDate, false};
    } else if (ec == websocket::error::message_too_big) {
        info.byPeer = false;
        info.reason = "the peer sent a message over the limit of " +
                      std::to_string(m_setup.config.limits.maxMessageBytes) + " bytes";
    } else {
        if constexpr (kTls) // ours out of date: renewed soon, so tried again then
            info.fatal = isCertificateRefusal(ec) && !isCertificateExpiredAlert(ec);
        info.reason = std::string(stage) + " failed: " + (kTls ? describeTlsError(ec) : ec.message());
        info.nothingListens = ec == asio::error::connection_refused;
    }
    if (m_peerGoodbye) {
        info.reason = "the peer said goodbye: " + m_peerGoodbye->reason;
        info.clean = m_peerGoodbye->code == GoodbyeCode::Normal || m_peerGoodbye->code == GoodbyeCode::ShuttingDown;
        info.fatal = m_peerGoodbye->code == GoodbyeCode::VersionMismatch || m_peerGoodbye->code == GoodbyeCode::Refused;
    }
    finish(std::move(info));
}

template <class NextLayer> size_t LinkSession<NextLayer>::dropQueued()
{
    size_t dropped = 0;
    const auto first = m_queue.begin() + (m_writing ? 1 : 0); // a write in flight holds its frame
    for (auto it = first; it != m_queue.end(); ++it)
        if (it->reserved) {
            m_queuedBytes -= it->reserved;
            --m_queuedMessages;
            ++dropped;
        }
    m_queue.erase(first, m_queue.end());
    return dropped;
}

template <class NextLayer> void LinkSession<NextLayer>::finish(CloseInfo info)
{
    if (m_finished)
        return;
    m_finished = true;
    m_state = State::Closed;
    m_deadline.cancel();
    m_writeWait.cancel();
    m_readWait.cancel();
    m_keepalive.cancel();
    if (m_resolver)
        m_resolver->cancel();
    if constexpr (kTls) {
        beast::error_code ignored;
        beast::get_lowest_layer(m_ws).close(ignored);
    } else {
        beast::get_lowest_layer(m_ws).close();
    }
    // The read and write buffers stay until the session goes: a cancelled operation may
    // still hold them.
    const size_t dropped = dropQueued();
    const std::string line = "link " + describe() + " closed: " + info.reason +
                             (dropped ? " (" + std::to_string(dropped) + " queued messages dropped)" : "");
    if (info.clean)
        log::info("net", line);
    else
        log::warning("net", line);
    notify(m_setup.events.closed, self(), info);
}

} // namespace rookery::net
