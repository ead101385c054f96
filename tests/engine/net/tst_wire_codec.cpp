// SPDX-License-Identifier: GPL-3.0-or-later
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "engine/common/error.h"
#include "engine/common/half_float.h"
#include "engine/common/int_blocks.h"
#include "engine/common/value_precision.h"
#include "engine/net/crc32c.h"
#include "engine/net/wire.pb.h"
#include "engine/net/wire_codec.h"
#include "tests/engine/net/allocation_probe.h"
#include "tests/engine/net/wire_samples.h"

using namespace rookery;
using namespace rookery::net;

Q_DECLARE_METATYPE(rookery::net::WireError)
Q_DECLARE_METATYPE(rookery::ValuePrecision)

namespace {

using Bytes = std::vector<uint8_t>;

DecodeResult decode(const Bytes &frame, const WireLimits &limits = {})
{
    auto owner = std::make_shared<Bytes>(frame);
    return decodeFrame(owner, *owner, limits);
}

// A frame from a hand-made Envelope and tensor bodies, laid out as the protocol says
// (64-byte aligned tensors, a trailer of checksums): the way a hostile peer would.
Bytes frameOf(const wire::Envelope &env, const std::vector<Bytes> &tensors = {})
{
    const std::string header = env.SerializeAsString();
    Bytes f(4 + header.size());
    const uint32_t n = uint32_t(header.size());
    std::memcpy(f.data(), &n, 4);
    std::memcpy(f.data() + 4, header.data(), header.size());
    for (const auto &t : tensors) {
        f.resize((f.size() + 63) / 64 * 64);
        f.insert(f.end(), t.begin(), t.end());
    }
    for (const auto &t : tensors) {
        const uint32_t crc = crc32c(t);
        f.insert(f.end(), reinterpret_cast<const uint8_t *>(&crc), reinterpret_cast<const uint8_t *>(&crc) + 4);
    }
    return f;
}

wire::Envelope activationsEnvelope(std::vector<int64_t> shape, uint64_t byteLength, int dtype = wire::FLOAT32)
{
    wire::Envelope env;
    auto *t = env.mutable_activations()->mutable_activations();
    t->set_dtype(wire::DType(dtype));
    for (auto d : shape)
        t->add_shape(d);
    t->set_byte_length(byteLength);
    return env;
}

Bytes encoded(const Message &m, Compression c = Compression::None) { return encodeFrame(m, c).flatten(); }

} // namespace

class TestWireCodec : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void crc32cKnownAnswer()
    {
        const char *text = "123456789";
        const std::span<const uint8_t> s(reinterpret_cast<const uint8_t *>(text), 9);
        QCOMPARE(crc32c(s), 0xe3069283u);
        QCOMPARE(crc32cPortable(s), 0xe3069283u);
        QCOMPARE(crc32c(s.subspan(4), crc32c(s.first(4))), 0xe3069283u); // chaining
    }

    void crc32cAcceleratedMatchesPortable()
    {
        std::mt19937 rng(7);
        Bytes data(200'000);
        for (auto &b : data)
            b = uint8_t(rng());
        for (size_t len : {0, 1, 7, 8, 255, 769, 24'575, 24'576, 24'577, 100'003, 199'990}) {
            for (size_t offset : {0, 1, 3}) {
                const std::span<const uint8_t> s(data.data() + offset, len);
                QCOMPARE(crc32c(s, 0x1234), crc32cPortable(s, 0x1234));
            }
        }
    }

    void halfConversionsRoundTripEveryHalf()
    {
        // Every fp16 value widens and narrows back to itself, on the vector and scalar paths.
        std::vector<uint16_t> all(65536);
        for (size_t i = 0; i < all.size(); ++i)
            all[i] = uint16_t(i);
        std::vector<float> wide(all.size());
        halfToFloat(all, wide.data());
        std::vector<uint16_t> back(all.size());
        floatToHalf(wide, back.data());
        for (size_t i = 0; i < all.size(); ++i) {
            float scalar;
            halfToFloat(std::span(&all[i], 1), &scalar);
            const bool nan = std::isnan(wide[i]);
            QVERIFY(nan == std::isnan(scalar));
            if (!nan) {
                QCOMPARE(scalar, wide[i]);
                QCOMPARE(back[i], all[i]);
                uint16_t one;
                floatToHalf(std::span(&wide[i], 1), &one);
                QCOMPARE(one, all[i]);
            }
        }
    }

    // Blocks of 8- and 4-bit codes: every value within half its block's step (2^e, the
    // smallest power of two with the block's largest |value| <= M * 2^e, M = 127 or 7)
    // of where it was; values already on the grid travel exactly; a block of zeros stays
    // zero; a value that is not finite has no code, and rounding leaves its block alone.
    void intBlocksRoundWithinHalfAStep_data()
    {
        QTest::addColumn<int>("bits");
        QTest::addColumn<int>("bytes"); // of 337 values: codes, then 6 exponents
        QTest::newRow("8-bit") << 8 << 337 + 6;
        QTest::newRow("4-bit") << 4 << 169 + 6;
    }

    void intBlocksRoundWithinHalfAStep()
    {
        QFETCH(int, bits);
        QFETCH(int, bytes);
        const CodeBits b = CodeBits(bits);
        const double m = bits == 8 ? 127 : 7;
        std::mt19937 rng(7);
        std::normal_distribution<float> normal(0, 1);
        std::vector<float> values(64 * 5 + 17); // a short last block, an odd count
        for (size_t i = 0; i < values.size(); ++i)
            values[i] = normal(rng) * std::ldexp(1.0f, int(i / 64) * 9 - 20); // 2^-20 .. 2^16
        for (size_t i = 64; i < 128; ++i)
            values[i] = 0;
        std::vector<uint8_t> packed(intBlocksBytes(values.size(), b));
        QCOMPARE(int(packed.size()), bytes);
        QVERIFY(floatToIntBlocks(values, b, packed.data()));
        std::vector<float> back(values.size());
        QVERIFY(intBlocksToFloat(packed, values.size(), b, back.data()));
        for (size_t begin = 0; begin < values.size(); begin += 64) {
            const size_t end = std::min(values.size(), begin + 64);
            float largest = 0;
            for (size_t i = begin; i < end; ++i)
                largest = std::max(largest, std::fabs(values[i]));
            int e = -128;
            while (largest > std::ldexp(m, e))
                ++e;
            QCOMPARE(int(int8_t(packed[size_t(bytes) - 6 + begin / 64])), e);
            for (size_t i = begin; i < end; ++i)
                QVERIFY2(std::fabs(back[i] - values[i]) <= std::ldexp(0.5, e), qPrintable(QString::number(i)));
        }
        for (size_t i = 64; i < 128; ++i)
            QCOMPARE(back[i], 0.0f);
        // On the grid: rounding in place gives what the codec gives, and again nothing.
        std::vector<float> rounded = values;
        roundToIntBlocks(rounded, b);
        QVERIFY(rounded == back);
        QVERIFY(floatToIntBlocks(rounded, b, packed.data()));
        QVERIFY(intBlocksToFloat(packed, rounded.size(), b, back.data()));
        QVERIFY(rounded == back);
        roundToIntBlocks(rounded, b);
        QVERIFY(rounded == back);
        // Not finite, or too large for any exponent.
        for (const float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                                std::numeric_limits<float>::max()}) {
            std::vector<float> withBad = values;
            withBad[200] = bad;
            QVERIFY(!floatToIntBlocks(withBad, b, packed.data()));
            roundToIntBlocks(withBad, b);
            QVERIFY(std::isnan(bad) ? std::isnan(withBad[200]) : withBad[200] == bad);
            QCOMPARE(withBad[201], values[201]); // its block untouched
            QCOMPARE(withBad[3], rounded[3]);    // the others rounded
        }
    }

    // A 4-bit code decodes as two's complement: 0x8 is -8, 0x7 is 7, low nibble first.
    void int4CodesAreTwosComplementNibbles()
    {
        const std::vector<uint8_t> packed{0x87, 0x0f, 0}; // codes 7, -8, -1, 0; exponent 0
        std::vector<float> out(4);
        QVERIFY(intBlocksToFloat(packed, 4, CodeBits::Four, out.data()));
        QCOMPARE(out, (std::vector<float>{7, -8, -1, 0}));
    }

    void halfRoundsToNearestEven()
    {
        const std::vector<float> in = {1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048, 65504.0f, 65520.0f, 1e-8f, -2.5f};
        std::vector<uint16_t> h(in.size()), b(in.size());
        floatToHalf(in, h.data());
        floatToBfloat16(in, b.data());
        QCOMPARE(h[0], uint16_t(0x3c00)); // tie goes to even (1.0)
        QCOMPARE(h[1], uint16_t(0x3c02)); // tie goes to even (1 + 2/1024)
        QCOMPARE(h[2], uint16_t(0x7bff)); // largest finite half
        QCOMPARE(h[3], uint16_t(0x7c00)); // overflows to infinity
        QCOMPARE(h[4], uint16_t(0x0000)); // below half the smallest subnormal
        QCOMPARE(h[5], uint16_t(0xc100));
        std::vector<float> w(in.size());
        bfloat16ToFloat(b, w.data());
        QCOMPARE(w[5], -2.5f);
        QCOMPARE(w[0], 1.0f);
    }

    void everyMessageRoundTrips()
    {
        for (const auto &m : test::sampleMessages()) {
            const auto r = decode(encoded(m));
            QVERIFY2(r.ok(), r.reason.c_str());
            QVERIFY2(test::sameMessage(m, *r.message), messageName(m).data());
        }
    }

    // A test's number and last batch mean something only on a test batch: on a training
    // microbatch they are dropped, so no stage keeps weights for a test that is not one.
    void testNumbersComeOnlyWithTestBatches()
    {
        Activations a{9, 4, test::floatTensor({3, 13}, 0.25f), test::labelTensor(3), false, 5, true};
        auto r = decode(encoded(a));
        QVERIFY2(r.ok(), r.reason.c_str());
        QCOMPARE(std::get<Activations>(*r.message).testId, uint64_t(0));
        QVERIFY(!std::get<Activations>(*r.message).testLast);
        a.evaluation = true;
        r = decode(encoded(a));
        QVERIFY2(r.ok(), r.reason.c_str());
        QCOMPARE(std::get<Activations>(*r.message).testId, uint64_t(5));
        QVERIFY(std::get<Activations>(*r.message).testLast);
    }

    void tensorsPointIntoTheFrameAtAlignedOffsets()
    {
        const Message m = test::sampleMessages()[5]; // Activations with labels
        auto frame = std::make_shared<Bytes>(encoded(m));
        const auto r = decodeFrame(frame, *frame);
        QVERIFY(r.ok());
        const auto &a = std::get<Activations>(*r.message);
        for (const auto *t : {&a.activations, &a.labels}) {
            QVERIFY(t->data >= frame->data() && t->data + t->bytes <= frame->data() + frame->size());
            QCOMPARE(size_t(t->data - frame->data()) % FrameDecoder::kTensorAlignment, size_t(0));
            QCOMPARE(t->owner.get(), static_cast<const void *>(frame.get()));
        }
    }

    void compressionNarrowsOnlyActivationsAndGradients_data()
    {
        QTest::addColumn<int>("compression");
        QTest::newRow("fp16") << int(Compression::Fp16);
        QTest::newRow("bf16") << int(Compression::Bf16);
    }

    void compressionNarrowsOnlyActivationsAndGradients()
    {
        QFETCH(int, compression);
        const auto c = Compression(compression);
        for (const auto &m : test::sampleMessages()) {
            const Bytes plain = encoded(m), small = encoded(m, c);
            const auto r = decode(small);
            QVERIFY2(r.ok(), r.reason.c_str());
            // The samples' values are exact in both formats, so they come back unchanged.
            QVERIFY2(test::sameMessage(m, *r.message), messageName(m).data());
            // (A test batch's answer carries an empty tensor: nothing to narrow.)
            const auto *g = std::get_if<Gradients>(&m);
            const bool narrowed = std::holds_alternative<Activations>(m) || (g && g->gradients.bytes > 0);
            QCOMPARE(small.size() < plain.size(), narrowed);
        }
    }

    // A ring chunk of differences already rounded to bf16 or to int8 or int4 blocks
    // travels so on any link, compressed or not, and arrives as the same float32 values
    // with its base: 2 bytes a value as bf16, 1 or a half and an exponent per 64 as int8
    // or int4.
    void aRingChunkTravelsInItsPrecisionOnAnyLink_data()
    {
        QTest::addColumn<ValuePrecision>("precision");
        QTest::addColumn<int>("saved");
        QTest::newRow("bf16") << ValuePrecision::Bf16 << 2000;
        QTest::newRow("int8") << ValuePrecision::Int8 << 4000 - 1016;
        QTest::newRow("int4") << ValuePrecision::Int4 << 4000 - 516;
    }

    void aRingChunkTravelsInItsPrecisionOnAnyLink()
    {
        QFETCH(ValuePrecision, precision);
        QFETCH(int, saved);
        std::mt19937 rng(3);
        std::normal_distribution<float> step(0, 1e-3f);
        std::vector<float> values(1000);
        for (auto &v : values)
            v = step(rng);
        roundForPrecision(values, precision);
        std::vector<uint8_t> bytes(values.size() * 4);
        std::memcpy(bytes.data(), values.data(), bytes.size());
        RingChunk m{99, 12, 1, 0, tensorBufferFromBytes(DType::Float32, {1000}, std::move(bytes)), 42, precision};
        RingChunk wide = m;
        wide.precision = ValuePrecision::Float32;
        for (const auto c : {Compression::None, Compression::Fp16}) {
            const Bytes small = encoded(m, c), plain = encoded(wide, c);
            QCOMPARE(plain.size() - small.size(), size_t(saved));
            const auto r = decode(small);
            QVERIFY2(r.ok(), r.reason.c_str());
            const auto &got = std::get<RingChunk>(*r.message);
            QCOMPARE(got.base, uint64_t(42));
            QVERIFY(got.tensor.dtype == DType::Float32);
            QVERIFY(test::sameMessage(m, *r.message));
        }
    }

    // A value with no int8 code (not finite) sends its chunk as float32, whole: the
    // receiver sees it as it is, and its ring's check refuses it.
    void anInt8RingChunkWithNaNTravelsAsFloat32()
    {
        std::vector<float> values(100, 0.25f);
        values[70] = std::numeric_limits<float>::quiet_NaN();
        std::vector<uint8_t> bytes(values.size() * 4);
        std::memcpy(bytes.data(), values.data(), bytes.size());
        const RingChunk m{
            99, 12, 1, 0, tensorBufferFromBytes(DType::Float32, {100}, std::move(bytes)), 42, ValuePrecision::Int8};
        const Bytes frame = encoded(m);
        const auto r = decode(frame);
        QVERIFY2(r.ok(), r.reason.c_str());
        const auto &got = std::get<RingChunk>(*r.message);
        QCOMPARE(got.tensor.bytes, size_t(400));
        std::vector<float> back(100);
        std::memcpy(back.data(), got.tensor.data, 400);
        QVERIFY(std::isnan(back[70]));
        QCOMPARE(back[0], 0.25f);
    }

    void chunkedEncodingMatchesTheWholeFrame()
    {
        // A writer that takes the frame in chunks gets the same bytes, the checksums
        // computed on the way.
        for (const auto &m : test::sampleMessages()) {
            const Bytes whole = encoded(m);
            auto frame = encodeFrame(m, Compression::None, false);
            Bytes streamed;
            while (!frame.allHandedOut())
                for (const auto &p : frame.nextChunk(100))
                    streamed.insert(streamed.end(), p.data, p.data + p.size);
            QCOMPARE(streamed, whole);
        }
    }

    void encodeRefusesInconsistentTensors()
    {
        auto t = test::floatTensor({4, 4}, 1.0f);
        t.shape = {4, 5};
        QVERIFY_THROWS_EXCEPTION(Error, encodeFrame(Gradients{1, 1, t}));
        auto labels = test::floatTensor({4}, 1.0f); // labels must be int64
        QVERIFY_THROWS_EXCEPTION(Error, encodeFrame(Activations{1, 1, test::floatTensor({4, 4}, 1.0f), labels}));
    }

    void streamingStepsAgreeWithOneShot()
    {
        const Bytes f = encoded(test::sampleMessages()[10]);
        FrameDecoder d;
        const size_t headerEnd = d.headerEnd(std::span(f).first(4));
        QVERIFY(headerEnd > 4 && headerEnd < f.size());
        QCOMPARE(d.parseHeader(std::span(f).first(headerEnd)), uint64_t(f.size()));
        QCOMPARE(d.messageName(), std::string_view("WeightsReply"));
        auto owner = std::make_shared<Bytes>(f);
        QVERIFY(d.finish(owner, *owner).ok());
    }

    void everyTruncationIsRefused()
    {
        for (const auto &m : test::sampleMessages()) {
            const Bytes f = encoded(m);
            for (size_t cut = 0; cut < f.size(); cut += (cut < 200 ? 1 : 61)) {
                const auto r = decode(Bytes(f.begin(), f.begin() + long(cut)));
                QVERIFY2(!r.ok() && r.error == WireError::Truncated, r.reason.c_str());
            }
        }
    }

    void malformedFramesAreRefused_data()
    {
        QTest::addColumn<QByteArray>("frame");
        QTest::addColumn<WireError>("error");
        QTest::addColumn<QString>("mentions");
        auto row = [](const char *name, const Bytes &f, WireError e, const char *mentions) {
            QTest::newRow(name) << QByteArray(reinterpret_cast<const char *>(f.data()), qsizetype(f.size())) << e
                                << QString(mentions);
        };
        Bytes trailing = encoded(Ping{1, {}});
        trailing.push_back(0);
        row("trailing byte", trailing, WireError::TrailingBytes, "only");
        row("header length 4 GiB", {0xff, 0xff, 0xff, 0xff, 1, 2, 3}, WireError::HeaderTooLarge, "4294967295");
        row("header length 0", {0, 0, 0, 0}, WireError::MalformedHeader, "0");
        row("garbage header", {3, 0, 0, 0, 0xff, 0xff, 0xff}, WireError::MalformedHeader, "not a valid");
        wire::Envelope unknown;
        unknown.GetReflection()->MutableUnknownFields(&unknown)->AddLengthDelimited(99, "future");
        row("unknown message type", frameOf(unknown), WireError::UnknownMessageType, "99");
        wire::Envelope noTensor;
        noTensor.mutable_activations()->set_microbatch_id(1);
        row("missing tensor", frameOf(noTensor), WireError::MalformedHeader, "no activations");
        row("huge tensor", frameOf(activationsEnvelope({1ll << 40, 4}, 1ull << 44)), WireError::LimitExceeded,
            "elements");
        row("overflowing shape", frameOf(activationsEnvelope({1ll << 62, 1ll << 62, 0}, 0)), WireError::LimitExceeded,
            "elements");
        row("length field disagrees with shape", frameOf(activationsEnvelope({4}, 1ull << 60)), WireError::BadTensor,
            "declares");
        row("negative dimension", frameOf(activationsEnvelope({-4}, 16)), WireError::BadTensor, "negative");
        row("too many dimensions", frameOf(activationsEnvelope({1, 1, 1, 1, 1, 1, 1, 1, 1}, 4)),
            WireError::LimitExceeded, "dimensions");
        row("unknown dtype", frameOf(activationsEnvelope({4}, 16, 9)), WireError::BadTensor, "dtype");
        auto int64Fp16 = activationsEnvelope({4}, 8, wire::INT64);
        int64Fp16.mutable_activations()->mutable_activations()->set_encoding(wire::ENCODING_FP16);
        row("fp16 encoding of int64", frameOf(int64Fp16), WireError::BadTensor, "encoding");
        // 64 values as int8 blocks: 64 codes and one exponent.
        auto int8Blocks = activationsEnvelope({64}, 65);
        int8Blocks.mutable_activations()->mutable_activations()->set_encoding(wire::ENCODING_INT8_BLOCKS);
        Bytes hugeExponent(65, 1);
        hugeExponent[64] = uint8_t(kBlockMaxExponent + 1); // 127 * 2^121 is no float
        row("int8 block exponent past 120", frameOf(int8Blocks, {hugeExponent}), WireError::BadTensor, "exponent");
        auto int8Short = activationsEnvelope({64}, 64);
        int8Short.mutable_activations()->mutable_activations()->set_encoding(wire::ENCODING_INT8_BLOCKS);
        row("int8 blocks without their exponent", frameOf(int8Short, {Bytes(64, 1)}), WireError::BadTensor, "declares");
        auto int4Blocks = activationsEnvelope({64}, 33); // 32 bytes of codes and one exponent
        int4Blocks.mutable_activations()->mutable_activations()->set_encoding(wire::ENCODING_INT4_BLOCKS);
        Bytes int4Huge(33, 0x11);
        int4Huge[32] = uint8_t(kBlockMaxExponent + 1);
        row("int4 block exponent past 120", frameOf(int4Blocks, {int4Huge}), WireError::BadTensor, "exponent");
        auto unknownEncoding = activationsEnvelope({4}, 16);
        unknownEncoding.mutable_activations()->mutable_activations()->set_encoding(wire::Encoding(5));
        row("unknown encoding", frameOf(unknownEncoding, {Bytes(16, 0)}), WireError::BadTensor, "encoding");
        auto floatLabels = activationsEnvelope({4}, 16);
        *floatLabels.mutable_activations()->mutable_labels() = floatLabels.activations().activations();
        const Bytes sixteen(16, 0x5a);
        row("float labels", frameOf(floatLabels, {sixteen, sixteen}), WireError::MalformedHeader, "int64");
        wire::Envelope longReason;
        longReason.mutable_goodbye()->set_reason(std::string(5000, 'x'));
        row("long string", frameOf(longReason), WireError::LimitExceeded, "reason");
        wire::Envelope manyTensors;
        for (int i = 0; i < 5000; ++i)
            manyTensors.mutable_weights_reply()->add_tensors()->mutable_tensor()->set_dtype(wire::UINT8);
        row("too many tensors", frameOf(manyTensors), WireError::LimitExceeded, "tensors");
        wire::Envelope paddedPing;
        paddedPing.mutable_ping()->set_padding(std::string(net::kMaxPingPaddingBytes + 1, '\0'));
        row("ping padded over 60 KiB", frameOf(paddedPing), WireError::LimitExceeded, "padding of 61441 bytes");
        const auto linkFigure = [](double upload) {
            wire::Envelope e;
            auto *l = e.mutable_heartbeat()->mutable_metrics()->add_links();
            l->set_peer_id("bb22");
            l->set_upload_bytes_per_second(upload);
            return e;
        };
        row("a link figure with a negative upload", frameOf(linkFigure(-1)), WireError::LimitExceeded,
            "not a finite, non-negative");
        row("a link figure with a NaN upload", frameOf(linkFigure(std::nan(""))), WireError::LimitExceeded,
            "not a finite, non-negative");
        wire::Envelope offer;
        offer.mutable_heartbeat()->mutable_metrics()->set_compute_offer_scale(-0.5);
        row("a negative compute offer scale", frameOf(offer), WireError::LimitExceeded, "compute offer scale");
        wire::Envelope manyLinks;
        for (int i = 0; i < 5000; ++i)
            manyLinks.mutable_heartbeat()->mutable_metrics()->add_links()->set_peer_id("p");
        row("too many link figures", frameOf(manyLinks), WireError::LimitExceeded, "link figures");
        Bytes badCrc = encoded(test::sampleMessages()[7]); // Gradients: one tensor, a 4-byte trailer
        badCrc[badCrc.size() - 5] ^= 1;
        row("bad checksum", badCrc, WireError::BadChecksum, "CRC-32C");
        Bytes badTrailer = encoded(test::sampleMessages()[7]);
        badTrailer.back() ^= 1;
        row("bad checksum in the trailer", badTrailer, WireError::BadChecksum, "CRC-32C");
        const auto tally = [](TestTally t) { return encoded(Gradients{9, 0, test::floatTensor({0}, 0), t}); };
        row("a tally with more right than samples", tally({10, 11, 1.0}), WireError::MalformedHeader, "TestTally");
        row("a tally of too many samples", tally({2'000'000, 1, 1.0}), WireError::MalformedHeader, "1,000,000");
        row("a tally with a NaN loss", tally({10, 1, std::nan("")}), WireError::MalformedHeader, "finite");
        row("a tally with a negative loss", tally({10, 1, -1.0}), WireError::MalformedHeader, "negative");
        wire::Envelope badHello;
        badHello.mutable_hello()->set_min_version(3);
        badHello.mutable_hello()->set_max_version(1);
        badHello.mutable_hello()->set_role(wire::ROLE_NODE);
        row("inverted version range", frameOf(badHello), WireError::MalformedHeader, "version");
        wire::Envelope futureState;
        futureState.mutable_assignment_update()->mutable_assignment()->set_state(wire::AssignmentState(7));
        row("unknown assignment state", frameOf(futureState), WireError::MalformedHeader, "unknown state 7");
        wire::Envelope rankPastSize;
        auto *ring = rankPastSize.mutable_assignment_update()->mutable_assignment()->add_rings();
        ring->set_size(3);
        ring->set_rank(3);
        ring->mutable_previous()->set_node_id("p");
        ring->mutable_next()->set_node_id("n");
        row("ring rank past its size", frameOf(rankPastSize), WireError::MalformedHeader,
            "rank 3 is not below its size 3");
        wire::Envelope lonelyNeighbour;
        ring = lonelyNeighbour.mutable_assignment_update()->mutable_assignment()->add_rings();
        ring->mutable_next()->set_node_id("n");
        row("a ring of one with a neighbour", frameOf(lonelyNeighbour), WireError::MalformedHeader,
            "a ring of 1 names neighbours");
        wire::Envelope halfRing;
        ring = halfRing.mutable_registration_reply()->mutable_assignment()->add_rings();
        ring->set_size(4);
        ring->mutable_previous()->set_node_id("p");
        row("a ring of four with one neighbour", frameOf(halfRing), WireError::MalformedHeader, "lacks a neighbour");
        wire::Envelope longNeighbour;
        ring = longNeighbour.mutable_assignment_update()->mutable_assignment()->add_rings();
        ring->set_size(2);
        ring->mutable_previous()->set_node_id(std::string(5000, 'p'));
        ring->mutable_next()->set_node_id("n");
        row("a ring neighbour's long id", frameOf(longNeighbour), WireError::LimitExceeded, "node id");
        wire::Envelope longName;
        longName.mutable_registration()->set_name(std::string(5000, 'x'));
        row("long node name", frameOf(longName), WireError::LimitExceeded, "name");
    }

    void malformedFramesAreRefused()
    {
        QFETCH(QByteArray, frame);
        QFETCH(WireError, error);
        QFETCH(QString, mentions);
        const Bytes f(frame.begin(), frame.end());
        test::resetLargestAllocation();
        const auto r = decode(f);
        QVERIFY(!r.ok());
        QVERIFY2(r.error == error, (std::string(wireErrorName(r.error)) + ": " + r.reason).c_str());
        QVERIFY2(QString::fromStdString(r.reason).contains(mentions), r.reason.c_str());
        // Whatever the length fields claim, decoding allocates little more than the frame.
        QVERIFY2(test::largestAllocation() < 1024 * 1024 + f.size() * 2,
                 std::to_string(test::largestAllocation()).c_str());
    }

    void frameLimitAppliesToTheWholeFrame()
    {
        WireLimits small;
        small.maxMessageBytes = 1000;
        QVERIFY(decode(encoded(Gradients{1, 1, test::floatTensor({100}, 1)}), small).ok());
        const auto r = decode(encoded(Gradients{1, 1, test::floatTensor({300}, 1)}), small);
        QCOMPARE(r.error, WireError::LimitExceeded);
    }
};

QTEST_APPLESS_MAIN(TestWireCodec)
#include "tst_wire_codec.moc"
