// SPDX-License-Identifier: GPL-3.0-or-later
#include <cstring>
#include <limits>

#include "engine/common/half_float.h"
#include "engine/common/int_blocks.h"
#include "engine/net/crc32c.h"
#include "engine/net/wire_codec.h"
#include "engine/net/wire_schema.h"

namespace rookery::net {
namespace {

constexpr size_t kAlign = FrameDecoder::kTensorAlignment;

std::string bytesText(uint64_t n) { return std::to_string(n) + " bytes"; }

// The unknown field numbers of an Envelope that parsed without a known message.
std::string unknownFields(const wire::Envelope &env)
{
    const auto &unknown = env.GetReflection()->GetUnknownFields(env);
    std::string fields;
    for (int i = 0; i < unknown.field_count() && i < 4; ++i)
        fields += (fields.empty() ? "" : ", ") + std::to_string(unknown.field(i).number());
    return fields;
}

struct TensorSlot
{
    const wire::Tensor *descriptor;
    const char *role;
    uint64_t offset;
    uint64_t elements;
};

} // namespace

struct FrameDecoder::State
{
    WireLimits limits;
    WireError error = WireError::None;
    std::string reason;
    uint32_t headerBytes = 0;
    uint64_t frameBytes = 0;
    wire::Envelope envelope;
    std::vector<TensorSlot> tensors;
    std::string_view name = "?";

    size_t fail(WireError e, std::string why)
    {
        error = e;
        reason = std::move(why);
        return 0;
    }
    bool checkTensor(size_t index, const schema::InTensor &in, uint64_t &end);
};

FrameDecoder::FrameDecoder(WireLimits limits)
    : m(std::make_unique<State>())
{
    m->limits = limits;
}

FrameDecoder::~FrameDecoder() = default;
FrameDecoder::FrameDecoder(FrameDecoder &&) noexcept = default;
FrameDecoder &FrameDecoder::operator=(FrameDecoder &&) noexcept = default;

WireError FrameDecoder::error() const { return m->error; }
const std::string &FrameDecoder::reason() const { return m->reason; }
std::string_view FrameDecoder::messageName() const { return m->name; }
const WireLimits &FrameDecoder::limits() const { return m->limits; }

size_t FrameDecoder::headerEnd(std::span<const uint8_t> prefix, uint64_t frameBytesKnown)
{
    m->error = WireError::None;
    m->reason.clear();
    m->headerBytes = 0;
    m->frameBytes = 0;
    if (prefix.size() < kPrefixBytes)
        return m->fail(WireError::Truncated, "the frame is " + bytesText(prefix.size()) + ", shorter than its prefix");
    uint32_t h;
    std::memcpy(&h, prefix.data(), 4);
    if (h == 0)
        return m->fail(WireError::MalformedHeader, "the header length is 0");
    if (h > m->limits.maxHeaderBytes)
        return m->fail(WireError::HeaderTooLarge, "the header length field says " + bytesText(h) +
                                                      ", over the limit of " + bytesText(m->limits.maxHeaderBytes));
    if (frameBytesKnown && kPrefixBytes + h > frameBytesKnown)
        return m->fail(WireError::Truncated, "the header length field says " + bytesText(h) + " but the frame is " +
                                                 bytesText(frameBytesKnown));
    m->headerBytes = h;
    return kPrefixBytes + h;
}

bool FrameDecoder::State::checkTensor(size_t index, const schema::InTensor &in, uint64_t &end)
{
    const auto &d = *in.descriptor;
    const std::string which = "tensor " + std::to_string(index) + " (" + in.role + ")";
    if (d.dtype() < wire::FLOAT32 || d.dtype() > wire::UINT8)
        return fail(WireError::BadTensor, which + " has unknown dtype " + std::to_string(d.dtype()));
    if (d.encoding() < wire::ENCODING_RAW || d.encoding() > wire::ENCODING_INT4_BLOCKS ||
        (d.encoding() != wire::ENCODING_RAW && d.dtype() != wire::FLOAT32))
        return fail(WireError::BadTensor, which + " has an invalid encoding " + std::to_string(d.encoding()));
    if (uint64_t(d.shape_size()) > limits.maxDims)
        return fail(WireError::LimitExceeded, which + " has " + std::to_string(d.shape_size()) +
                                                  " dimensions, over the limit of " + std::to_string(limits.maxDims));
    uint64_t elements = 1;
    for (int64_t dim : d.shape()) {
        if (dim < 0)
            return fail(WireError::BadTensor, which + " has a negative dimension");
        if (dim != 0 && elements != 0 && uint64_t(dim) > limits.maxTensorElements / elements)
            return fail(WireError::LimitExceeded,
                        which + " has more than " + std::to_string(limits.maxTensorElements) + " elements");
        elements *= uint64_t(dim);
    }
    if (d.byte_length() != schema::encodedBytes(d.encoding(), DType(d.dtype()), elements))
        return fail(WireError::BadTensor, which + " declares " + bytesText(d.byte_length()) + " for " +
                                              std::to_string(elements) + " elements");
    const uint64_t offset = (end + kAlign - 1) / kAlign * kAlign;
    if (offset > limits.maxMessageBytes || d.byte_length() > limits.maxMessageBytes - offset)
        return fail(WireError::LimitExceeded,
                    "the frame would exceed the limit of " + bytesText(limits.maxMessageBytes) + " at " + which);
    tensors.push_back({&d, in.role, offset, elements});
    end = offset + d.byte_length();
    return true;
}

uint64_t FrameDecoder::parseHeader(std::span<const uint8_t> bytes)
{
    if (m->headerBytes == 0 && headerEnd(bytes) == 0)
        return 0;
    if (bytes.size() < kPrefixBytes + m->headerBytes)
        return m->fail(WireError::Truncated, "the frame ends inside its " + bytesText(m->headerBytes) + " header");
    auto &env = m->envelope;
    env.Clear();
    m->tensors.clear();
    if (!env.ParseFromArray(bytes.data() + kPrefixBytes, int(m->headerBytes)))
        return m->fail(WireError::MalformedHeader, "the header is not a valid Envelope");
    if (env.body_case() == wire::Envelope::BODY_NOT_SET) {
        const auto fields = unknownFields(env);
        if (fields.empty())
            return m->fail(WireError::MalformedHeader, "the header carries no message");
        return m->fail(WireError::UnknownMessageType, "unknown message type (Envelope field " + fields + ")");
    }
    const auto *field = env.GetDescriptor()->FindFieldByNumber(int(env.body_case()));
    m->name = field ? std::string_view(field->message_type()->name()) : "?";
    if (auto why = schema::checkFields(env, m->limits); !why.empty())
        return m->fail(WireError::LimitExceeded, std::string(m->name) + ": " + why);
    std::string why;
    const auto descriptors = schema::tensorDescriptors(env, why);
    if (!why.empty())
        return m->fail(WireError::MalformedHeader, std::string(m->name) + ": " + why);
    if (descriptors.size() > m->limits.maxTensors)
        return m->fail(WireError::LimitExceeded, std::string(m->name) + " has " + std::to_string(descriptors.size()) +
                                                     " tensors, over the limit of " +
                                                     std::to_string(m->limits.maxTensors));
    uint64_t end = kPrefixBytes + m->headerBytes;
    for (size_t i = 0; i < descriptors.size(); ++i)
        if (!m->checkTensor(i, descriptors[i], end))
            return 0;
    end += 4 * descriptors.size(); // the checksum trailer
    if (end > m->limits.maxMessageBytes)
        return m->fail(WireError::LimitExceeded, "the frame is " + bytesText(end) + ", over the limit of " +
                                                     bytesText(m->limits.maxMessageBytes));
    m->frameBytes = end;
    return end;
}

std::vector<FrameDecoder::TensorSpan> FrameDecoder::tensorSpans() const
{
    std::vector<TensorSpan> spans;
    for (const auto &t : m->tensors)
        spans.push_back({t.offset, t.descriptor->byte_length()});
    return spans;
}

DecodeResult FrameDecoder::finish(std::shared_ptr<const void> owner, std::span<const uint8_t> frame,
                                  std::span<const uint32_t> checksums)
{
    DecodeResult r;
    auto failed = [&](WireError e, std::string why) {
        m->fail(e, std::move(why));
        r.error = m->error;
        r.reason = m->reason;
        return r;
    };
    if (m->frameBytes == 0 && parseHeader(frame) == 0)
        return failed(m->error, m->reason);
    if (frame.size() < m->frameBytes)
        return failed(WireError::Truncated, std::string(m->name) + ": the frame is " + bytesText(frame.size()) +
                                                ", its header describes " + bytesText(m->frameBytes));
    if (frame.size() > m->frameBytes)
        return failed(WireError::TrailingBytes, std::string(m->name) + ": the frame is " + bytesText(frame.size()) +
                                                    ", its header describes only " + bytesText(m->frameBytes));
    std::vector<TensorBuffer> tensors;
    tensors.reserve(m->tensors.size());
    for (size_t i = 0; i < m->tensors.size(); ++i) {
        const auto &slot = m->tensors[i];
        const auto &d = *slot.descriptor;
        const uint8_t *data = frame.data() + slot.offset;
        const uint32_t crc = i < checksums.size() ? checksums[i] : crc32c({data, size_t(d.byte_length())});
        uint32_t expected;
        std::memcpy(&expected, frame.data() + m->frameBytes - 4 * (m->tensors.size() - i), 4);
        if (crc != expected)
            return failed(WireError::BadChecksum, std::string(m->name) + ": tensor " + std::to_string(i) + " (" +
                                                      slot.role + ") fails its CRC-32C check");
        TensorBuffer t;
        t.dtype = DType(d.dtype());
        t.shape.assign(d.shape().begin(), d.shape().end());
        if (d.encoding() == wire::ENCODING_RAW) {
            t.owner = owner;
            t.data = data;
            t.bytes = d.byte_length();
        } else { // widen back to float32; the size was checked against the limits
            auto wide = std::make_shared<std::vector<float>>(slot.elements);
            if (d.encoding() == wire::ENCODING_INT8_BLOCKS || d.encoding() == wire::ENCODING_INT4_BLOCKS) {
                const CodeBits bits = d.encoding() == wire::ENCODING_INT4_BLOCKS ? CodeBits::Four : CodeBits::Eight;
                if (!intBlocksToFloat({data, size_t(d.byte_length())}, slot.elements, bits, wide->data()))
                    return failed(WireError::BadTensor, std::string(m->name) + ": tensor " + std::to_string(i) + " (" +
                                                            slot.role + ") has a block exponent over " +
                                                            std::to_string(kBlockMaxExponent));
            } else {
                std::vector<uint16_t> copy; // only when the frame's bytes are not 2-byte aligned
                std::span<const uint16_t> narrow(reinterpret_cast<const uint16_t *>(data), slot.elements);
                if (reinterpret_cast<uintptr_t>(data) % alignof(uint16_t) != 0) {
                    copy.resize(slot.elements);
                    std::memcpy(copy.data(), data, d.byte_length());
                    narrow = copy;
                }
                if (d.encoding() == wire::ENCODING_FP16)
                    halfToFloat(narrow, wide->data());
                else
                    bfloat16ToFloat(narrow, wide->data());
            }
            t.data = reinterpret_cast<const uint8_t *>(wide->data());
            t.bytes = wide->size() * 4;
            t.owner = std::move(wide);
        }
        tensors.push_back(std::move(t));
    }
    std::string why;
    r.message = schema::fromEnvelope(m->envelope, tensors, why);
    if (!r.message)
        return failed(WireError::MalformedHeader, std::string(m->name) + ": " + why);
    m->frameBytes = 0;
    m->headerBytes = 0;
    return r;
}

DecodeResult decodeFrame(std::shared_ptr<const void> owner, std::span<const uint8_t> frame, const WireLimits &limits)
{
    FrameDecoder decoder(limits);
    return decoder.finish(std::move(owner), frame);
}

} // namespace rookery::net
