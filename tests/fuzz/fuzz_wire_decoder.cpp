// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: arbitrary bytes into the wire decoder, one-shot and step by step,
// under the default limits and under small ones. Whatever it decodes must encode and
// decode again. Built with -DROOKERY_FUZZ=ON (clang); installer/test.sh runs it.
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "engine/net/crc32c.h"
#include "engine/net/wire_codec.h"

using namespace rookery::net;

namespace {

WireLimits smallLimits()
{
    WireLimits l;
    l.maxMessageBytes = 1 << 20;
    l.maxHeaderBytes = 16 << 10;
    l.maxTensorElements = 1 << 16;
    l.maxDims = 4;
    l.maxTensors = 16;
    l.maxStringBytes = 256;
    l.maxListEntries = 16;
    return l;
}

[[noreturn]] void fail() { __builtin_trap(); }

void checkReencodes(const Message &m)
{
    auto again = encodeFrame(m).flatten();
    auto owner = std::make_shared<std::vector<uint8_t>>(std::move(again));
    if (!decodeFrame(owner, *owner).ok())
        fail();
}

void stepByStep(const std::shared_ptr<const std::vector<uint8_t>> &frame, const WireLimits &limits)
{
    FrameDecoder d(limits);
    const auto bytes = std::span<const uint8_t>(*frame);
    if (bytes.size() < FrameDecoder::kPrefixBytes)
        return;
    const size_t headerEnd = d.headerEnd(bytes.first(FrameDecoder::kPrefixBytes));
    if (headerEnd == 0 || headerEnd > bytes.size())
        return;
    const uint64_t total = d.parseHeader(bytes.first(headerEnd));
    if (total == 0 || total != bytes.size())
        return;
    // Checksums computed piecewise, as a link does while bytes arrive.
    std::vector<uint32_t> sums;
    for (const auto &span : d.tensorSpans()) {
        if (span.offset + span.bytes > bytes.size())
            fail(); // parseHeader promised the spans fit in `total`
        sums.push_back(0);
        for (uint64_t at = 0; at < span.bytes; at += 1000)
            sums.back() =
                crc32c(bytes.subspan(span.offset + at, std::min<uint64_t>(1000, span.bytes - at)), sums.back());
    }
    const auto piecewise = d.finish(frame, bytes, sums);
    const auto whole = decodeFrame(frame, bytes, limits);
    if (piecewise.ok() != whole.ok())
        fail();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    // An exact-size heap copy, so that AddressSanitizer sees any read past the end.
    auto frame = std::make_shared<const std::vector<uint8_t>>(data, data + size);
    static const WireLimits small = smallLimits();
    for (const WireLimits &limits : {WireLimits{}, small}) {
        const auto r = decodeFrame(frame, *frame, limits);
        if (r.ok() == (r.error != WireError::None))
            fail();
        if (r.ok())
            checkReencodes(*r.message);
        stepByStep(frame, limits);
    }
    return 0;
}
