// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/net/wire_codec.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>

#include "engine/common/error.h"
#include "engine/common/half_float.h"
#include "engine/common/int_blocks.h"
#include "engine/net/crc32c.h"
#include "engine/net/wire_schema.h"

namespace rookery::net {
namespace {

constexpr size_t kAlign = FrameDecoder::kTensorAlignment;
alignas(64) constexpr uint8_t kZeros[kAlign] = {};

uint64_t alignUp(uint64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Elements of `shape`, or nullopt when a dimension is negative or the product passes
// `limit` (checked before every multiplication, so it never overflows).
std::optional<uint64_t> elementCount(std::span<const int64_t> shape, uint64_t limit)
{
    uint64_t n = 1;
    for (int64_t d : shape) {
        if (d < 0)
            return std::nullopt;
        if (d == 0)
            return 0; // later dimensions may still be huge; the product is 0
        if (uint64_t(d) > limit / n)
            return std::nullopt;
        n *= uint64_t(d);
    }
    return n;
}

wire::Encoding encodingFor(Compression c)
{
    return c == Compression::Fp16   ? wire::ENCODING_FP16
           : c == Compression::Bf16 ? wire::ENCODING_BF16
                                    : wire::ENCODING_RAW;
}

// The float32 tensor's values: its own bytes, or a copy in `aligned` when they are not
// 4-byte aligned.
std::span<const float> floatsOf(const TensorBuffer &t, std::vector<float> &aligned)
{
    const size_t n = t.bytes / 4;
    if (reinterpret_cast<uintptr_t>(t.data) % alignof(float) == 0)
        return {reinterpret_cast<const float *>(t.data), n};
    aligned.resize(n);
    std::memcpy(aligned.data(), t.data, t.bytes);
    return aligned;
}

// The float32 tensor narrowed to 16 bits: the one copy on the send path, and only on
// links that agreed on compression.
TensorBuffer narrow(const TensorBuffer &t, Compression c)
{
    const size_t n = t.bytes / 4;
    auto storage = std::make_shared<std::vector<uint16_t>>(n);
    std::vector<float> aligned;
    const std::span<const float> in = floatsOf(t, aligned);
    if (c == Compression::Fp16)
        floatToHalf(in, storage->data());
    else
        floatToBfloat16(in, storage->data());
    TensorBuffer out = t;
    out.data = reinterpret_cast<const uint8_t *>(storage->data());
    out.bytes = n * 2;
    out.owner = std::move(storage);
    return out;
}

// The float32 tensor as blocks of integer codes, or nullopt when a value has no code
// (then it goes as float32, and the receiver judges it).
std::optional<TensorBuffer> packBlocks(const TensorBuffer &t, CodeBits bits)
{
    std::vector<float> aligned;
    const std::span<const float> in = floatsOf(t, aligned);
    auto storage = std::make_shared<std::vector<uint8_t>>(intBlocksBytes(in.size(), bits));
    if (!floatToIntBlocks(in, bits, storage->data()))
        return std::nullopt;
    TensorBuffer out = t;
    out.data = storage->data();
    out.bytes = storage->size();
    out.owner = std::move(storage);
    return out;
}

void describe(const TensorBuffer &t, wire::Tensor &d, const char *role, wire::Encoding encoding)
{
    const auto elements = elementCount(t.shape, std::numeric_limits<uint64_t>::max() / 8);
    if (!elements || schema::encodedBytes(encoding, t.dtype, *elements) != t.bytes || (t.bytes && !t.data))
        throw Error(std::string("cannot send the ") + role + " tensor: shape " + shapeText(t.shape) + " of " +
                    std::string(dtypeName(t.dtype)) + " does not match its " + std::to_string(t.bytes) + " bytes");
    d.set_dtype(wire::DType(int(t.dtype)));
    for (auto dim : t.shape)
        d.add_shape(dim);
    d.set_byte_length(t.bytes);
    d.set_encoding(encoding);
}

} // namespace

uint64_t schema::encodedBytes(wire::Encoding encoding, DType dtype, uint64_t elements)
{
    switch (encoding) {
    case wire::ENCODING_FP16:
    case wire::ENCODING_BF16:
        return elements * 2;
    case wire::ENCODING_INT8_BLOCKS:
        return intBlocksBytes(elements, CodeBits::Eight);
    case wire::ENCODING_INT4_BLOCKS:
        return intBlocksBytes(elements, CodeBits::Four);
    default:
        return elements * dtypeSize(dtype);
    }
}

std::string_view wireErrorName(WireError error)
{
    switch (error) {
    case WireError::None:
        return "none";
    case WireError::Truncated:
        return "truncated frame";
    case WireError::TrailingBytes:
        return "trailing bytes";
    case WireError::HeaderTooLarge:
        return "header too large";
    case WireError::MalformedHeader:
        return "malformed header";
    case WireError::UnknownMessageType:
        return "unknown message type";
    case WireError::LimitExceeded:
        return "limit exceeded";
    case WireError::BadTensor:
        return "bad tensor";
    case WireError::BadChecksum:
        return "bad checksum";
    }
    return "?";
}

std::vector<uint8_t> EncodedFrame::flatten()
{
    if (!m_checksummed)
        computeChecksums();
    std::vector<uint8_t> out;
    out.reserve(m_size);
    for (const auto &p : m_pieces)
        out.insert(out.end(), p.data, p.data + p.size);
    return out;
}

void EncodedFrame::computeChecksums()
{
    for (size_t i = 0; i < m_keep.size(); ++i)
        m_checksums[i] = crc32c(m_keep[i].span());
    writeTrailer();
}

void EncodedFrame::writeTrailer()
{
    for (size_t i = 0; i < m_checksums.size(); ++i)
        std::memcpy(m_trailer.data() + 4 * i, &m_checksums[i], 4); // little-endian hosts
    m_checksummed = true;
}

const std::vector<EncodedFrame::Piece> &EncodedFrame::nextChunk(size_t maxBytes)
{
    m_chunk.clear();
    while (m_cursor < m_pieces.size() && maxBytes > 0) {
        const Piece &p = m_pieces[m_cursor];
        if (p.data == m_trailer.data() && !m_checksummed)
            writeTrailer(); // every tensor came before it
        const size_t n = std::min(p.size - m_cursorOffset, maxBytes);
        const Piece out{p.data + m_cursorOffset, n, p.tensor};
        if (p.tensor >= 0 && !m_checksummed)
            m_checksums[size_t(p.tensor)] = crc32c({out.data, n}, m_checksums[size_t(p.tensor)]);
        m_chunk.push_back(out);
        maxBytes -= n;
        m_cursorOffset += n;
        if (m_cursorOffset == p.size) {
            ++m_cursor;
            m_cursorOffset = 0;
        }
    }
    return m_chunk;
}

EncodedFrame encodeFrame(const Message &message, Compression compression, bool checksumNow)
{
    EncodedFrame f;
    f.m_name = messageName(message);
    wire::Envelope env;
    std::vector<schema::OutTensor> tensors;
    schema::toEnvelope(message, env, tensors);
    f.m_keep.reserve(tensors.size());
    for (const auto &t : tensors) {
        const bool isFloat = t.source->dtype == DType::Float32;
        const Compression c = t.fixed == ValuePrecision::Bf16 ? Compression::Bf16 : compression;
        const bool narrowIt = (t.compressible || t.fixed == ValuePrecision::Bf16) && c != Compression::None && isFloat;
        const bool packIt = (t.fixed == ValuePrecision::Int8 || t.fixed == ValuePrecision::Int4) && isFloat;
        if ((narrowIt || packIt) && t.source->bytes % 4 != 0)
            throw Error(std::string("cannot send the ") + t.role + " tensor: its byte count is not a multiple of 4");
        const CodeBits bits = t.fixed == ValuePrecision::Int4 ? CodeBits::Four : CodeBits::Eight;
        std::optional<TensorBuffer> packed;
        if (packIt)
            packed = packBlocks(*t.source, bits);
        f.m_keep.push_back(packed ? std::move(*packed) : narrowIt ? narrow(*t.source, c) : *t.source);
        describe(f.m_keep.back(), *t.descriptor, t.role,
                 packed     ? (bits == CodeBits::Four ? wire::ENCODING_INT4_BLOCKS : wire::ENCODING_INT8_BLOCKS)
                 : narrowIt ? encodingFor(c)
                            : wire::ENCODING_RAW);
    }
    const size_t headerBytes = env.ByteSizeLong();
    const size_t headEnd = FrameDecoder::kPrefixBytes + headerBytes;
    f.m_head.resize(tensors.empty() ? headEnd : alignUp(headEnd));
    const uint32_t prefix = uint32_t(headerBytes); // little-endian on every host we build for
    std::memcpy(f.m_head.data(), &prefix, 4);
    env.SerializeWithCachedSizesToArray(f.m_head.data() + 4);
    f.m_pieces.push_back({f.m_head.data(), f.m_head.size(), -1});
    f.m_size = f.m_head.size();
    for (size_t i = 0; i < f.m_keep.size(); ++i) {
        const auto &t = f.m_keep[i];
        if (t.bytes)
            f.m_pieces.push_back({t.data, t.bytes, int(i)});
        f.m_size += t.bytes;
        if (i + 1 < f.m_keep.size() && alignUp(f.m_size) != f.m_size) {
            const size_t pad = alignUp(f.m_size) - f.m_size;
            f.m_pieces.push_back({kZeros, pad, -1});
            f.m_size += pad;
        }
    }
    f.m_checksums.assign(f.m_keep.size(), 0);
    f.m_trailer.resize(4 * f.m_keep.size());
    if (!f.m_trailer.empty()) {
        f.m_pieces.push_back({f.m_trailer.data(), f.m_trailer.size(), -1});
        f.m_size += f.m_trailer.size();
    }
    if (checksumNow)
        f.computeChecksums();
    else
        f.m_checksummed = f.m_keep.empty();
    return f;
}

} // namespace rookery::net
