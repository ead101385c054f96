// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/net/wire_message.h"

namespace rookery::net {

/// Limits every received frame is checked against before anything is allocated for
/// it. Defaults suit pipeline traffic of a few hundred MiB per message at most.
struct WireLimits
{
    uint64_t maxMessageBytes = 256ull << 20; ///< whole frame (also the WebSocket message limit)
    uint32_t maxHeaderBytes = 1u << 20;      ///< the protobuf header
    uint64_t maxTensorElements = 64ull << 20;
    uint32_t maxDims = 8;
    uint32_t maxTensors = 4096;     ///< per message
    uint32_t maxStringBytes = 4096; ///< ids, names, reasons
    uint32_t maxListEntries = 4096; ///< features, names
};

/// Why a frame was refused.
enum class WireError {
    None,
    Truncated,          ///< shorter than its header says
    TrailingBytes,      ///< longer than its header says
    HeaderTooLarge,     ///< the length prefix exceeds maxHeaderBytes or the frame
    MalformedHeader,    ///< not a valid Envelope, or a required field is missing
    UnknownMessageType, ///< an Envelope field this version does not know
    LimitExceeded,      ///< a size, count or string beyond WireLimits
    BadTensor,          ///< inconsistent dtype, shape, encoding or byte length
    BadChecksum,        ///< a tensor's CRC-32C does not match
};

std::string_view wireErrorName(WireError error);

/// A decoded message, or why there is none. `reason` is a sentence for the log.
struct DecodeResult
{
    std::optional<Message> message;
    WireError error = WireError::None;
    std::string reason;
    bool ok() const { return message.has_value(); }
};

/// One frame ready for a gather write: the prefix and header in a small buffer, each
/// tensor by reference to its own bytes (kept alive here), padding from a static block,
/// and the trailer of tensor checksums.
///
/// The checksums come last so that a writer can compute them chunk by chunk just before
/// each chunk goes out (nextChunk()): the bytes are then in cache for the encryption
/// that follows, instead of being read from memory twice.
///
/// Thread safety: one thread at a time.
class EncodedFrame
{
public:
    struct Piece
    {
        const uint8_t *data;
        size_t size;
        int tensor; ///< which tensor the bytes belong to; -1 for head, padding, trailer
    };
    EncodedFrame() = default;
    EncodedFrame(EncodedFrame &&) noexcept = default;
    EncodedFrame &operator=(EncodedFrame &&) noexcept = default;
    EncodedFrame(const EncodedFrame &) = delete; // the pieces point into m_head
    EncodedFrame &operator=(const EncodedFrame &) = delete;

    const std::vector<Piece> &pieces() const { return m_pieces; }
    size_t size() const { return m_size; }
    std::string_view messageName() const { return m_name; }

    /// Checksums every tensor now and fills in the trailer (encodeFrame() does this
    /// unless asked not to).
    void computeChecksums();
    /// The next at most `maxBytes` of the frame for a streaming write, checksumming the
    /// tensor bytes among them; the trailer is filled in when it is reached. Empty once
    /// the whole frame has been handed out.
    const std::vector<Piece> &nextChunk(size_t maxBytes);
    bool allHandedOut() const { return m_cursor == m_pieces.size(); }

    /// The whole frame as one byte vector (tests, the fuzz corpus); computes the
    /// checksums first if needed.
    std::vector<uint8_t> flatten();

private:
    friend EncodedFrame encodeFrame(const Message &, Compression, bool);
    void writeTrailer();

    std::vector<uint8_t> m_head;
    std::vector<TensorBuffer> m_keep;
    std::vector<Piece> m_pieces;
    std::vector<uint32_t> m_checksums;
    std::vector<uint8_t> m_trailer;
    bool m_checksummed = false;
    size_t m_cursor = 0, m_cursorOffset = 0;
    std::vector<Piece> m_chunk;
    size_t m_size = 0;
    std::string_view m_name;
};

/// Encodes one message. With `compression` other than None, float32 activations and
/// gradients travel as fp16 or bf16 (the only copy of tensor bytes on the send path).
/// With `checksumNow` false the checksums are left to nextChunk().
/// Throws rookery::Error when a tensor's byte count does not match its dtype and shape.
///
/// Thread safety: may be called from any thread.
EncodedFrame encodeFrame(const Message &message, Compression compression = Compression::None, bool checksumNow = true);

/// Decodes a frame in steps, so that a reader can learn a frame's size from its first
/// bytes and allocate exactly that, after checking it against the limits:
///   1. headerEnd(prefix)  - from the first 4 bytes: where the header ends;
///   2. parseHeader(bytes) - from the first headerEnd() bytes: the whole frame's size;
///   3. finish(frame)      - checks sizes and checksums; tensors point into the frame.
///
/// Thread safety: one decoder per reader.
class FrameDecoder
{
public:
    static constexpr size_t kPrefixBytes = 4;
    static constexpr size_t kTensorAlignment = 64;

    explicit FrameDecoder(WireLimits limits = {});
    ~FrameDecoder();
    FrameDecoder(FrameDecoder &&) noexcept;
    FrameDecoder &operator=(FrameDecoder &&) noexcept;

    /// The offset where the header ends (4 + its length), or 0 with error() set.
    size_t headerEnd(std::span<const uint8_t> prefix, uint64_t frameBytesKnown = 0);
    /// Parses and checks the header; returns the frame's total size, or 0 with error().
    uint64_t parseHeader(std::span<const uint8_t> prefixAndHeader);
    /// After parseHeader(): where each tensor's bytes lie in the frame, so that a reader
    /// can checksum them as they arrive, while they are still in cache.
    struct TensorSpan
    {
        uint64_t offset;
        uint64_t bytes;
    };
    std::vector<TensorSpan> tensorSpans() const;

    /// Checks the whole frame and builds the message; `owner` keeps `frame` alive for
    /// the tensors that point into it. `checksums`, when given, are the CRC-32C of each
    /// tensor span as the reader computed them (otherwise they are computed here).
    DecodeResult finish(std::shared_ptr<const void> owner, std::span<const uint8_t> frame,
                        std::span<const uint32_t> checksums = {});

    WireError error() const;
    const std::string &reason() const;
    std::string_view messageName() const; ///< after parseHeader()
    const WireLimits &limits() const;

private:
    struct State;
    std::unique_ptr<State> m;
};

/// All three steps for a frame already in memory (tests, the fuzzer).
DecodeResult decodeFrame(std::shared_ptr<const void> owner, std::span<const uint8_t> frame,
                         const WireLimits &limits = {});

} // namespace rookery::net
