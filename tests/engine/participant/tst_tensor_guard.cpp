// SPDX-License-Identifier: GPL-3.0-or-later
// The check on what a pipeline neighbour sends: finite values, and a scale near the
// running one.
#include <QtTest>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "engine/participant/tensor_guard.h"

using namespace rookery;
using participant::TensorGuard;

namespace {

TensorBuffer floats(const std::vector<float> &values, std::vector<int64_t> shape = {})
{
    std::vector<uint8_t> bytes(values.size() * sizeof(float));
    std::memcpy(bytes.data(), values.data(), bytes.size());
    if (shape.empty())
        shape = {int64_t(values.size())};
    return tensorBufferFromBytes(DType::Float32, std::move(shape), std::move(bytes));
}

std::vector<float> filled(size_t n, float value) { return std::vector<float>(n, value); }

} // namespace

class TestTensorGuard : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void nonFiniteValuesAreRefused()
    {
        TensorGuard g;
        QVERIFY(!g.check(floats({1, 2, 3})));
        auto v = filled(8, 0.5f);
        v[5] = std::numeric_limits<float>::quiet_NaN();
        const auto why = g.check(floats(v));
        QVERIFY(why && why->find("non-finite values (element 5 of 8)") != std::string::npos);
        v[5] = std::numeric_limits<float>::infinity();
        QVERIFY(g.check(floats(v)));
        QCOMPARE(g.refused(), int64_t(2));
    }

    void beforeAScaleOnlyAnAbsoluteLimitHolds()
    {
        TensorGuard g;
        QVERIFY(!g.check(floats(filled(4, 9000)))); // RMS 9,000: under 1e4
        const auto why = g.check(floats(filled(4, 2e4f)));
        QVERIFY(why && why->find("before any scale is known") != std::string::npos);
    }

    void aScaleFarFromTheUsualIsRefused()
    {
        TensorGuard g;
        for (int i = 0; i < TensorGuard::kWarmUp; ++i)
            QVERIFY(!g.check(floats(filled(16, 0.01f * float(1 + i % 3)))));
        QVERIFY(!g.check(floats(filled(16, 0.5f))));        // 25-50x: a change, not an attack
        const auto why = g.check(floats(filled(16, 1e4f))); // 1e6 x
        QVERIFY2(why && why->find("times the usual") != std::string::npos, why ? why->c_str() : "accepted");
        QVERIFY(!g.check(floats(filled(16, 0.02f)))); // honest values still pass after a refusal
        // Other dtypes and empty tensors pass unchecked (labels, "no gradient").
        QVERIFY(!g.check(tensorBufferFromBytes(DType::Int64, {1}, std::vector<uint8_t>(8, 0xff))));
        QVERIFY(!g.check(tensorBufferFromBytes(DType::Float32, {0}, {})));
    }
};

QTEST_APPLESS_MAIN(TestTensorGuard)
#include "tst_tensor_guard.moc"
