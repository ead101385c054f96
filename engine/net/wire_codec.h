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
/// tensor by reference to its own bytes (kept alive here), padding from a static block.
///
/// Thread safety: a plain value; immutable once built.
class EncodedFrame
{
public:
    struct Piece
    {
        const uint8_t *data;
        size_t size;
    };
    EncodedFrame() = default;
    EncodedFrame(EncodedFrame &&) noexcept = default;
    EncodedFrame &operator=(EncodedFrame &&) noexcept = default;
    EncodedFrame(const EncodedFrame &) = delete; // the pieces point into m_head
    EncodedFrame &operator=(const EncodedFrame &) = delete;

    const std::vector<Piece> &pieces() const { return m_pieces; }
    size_t size() const { return m_size; }
    std::string_view messageName() const { return m_name; }
    /// The whole frame as one byte vector (tests, the fuzz corpus).
    std::vector<uint8_t> flatten() const;

private:
    friend EncodedFrame encodeFrame(const Message &, Compression);
    std::vector<uint8_t> m_head;
    std::vector<TensorBuffer> m_keep;
    std::vector<Piece> m_pieces;
    size_t m_size = 0;
    std::string_view m_name;
};

/// Encodes one message. With `compression` other than None, float32 activations and
/// gradients travel as fp16 or bf16 (the only copy of tensor bytes on the send path).
/// Throws rookery::Error when a tensor's byte count does not match its dtype and shape.
///
/// Thread safety: may be called from any thread.
EncodedFrame encodeFrame(const Message &message, Compression compression = Compression::None);

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
    /// Checks the whole frame and builds the message; `owner` keeps `frame` alive for
    /// the tensors that point into it.
    DecodeResult finish(std::shared_ptr<const void> owner, std::span<const uint8_t> frame);

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
