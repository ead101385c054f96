// SPDX-License-Identifier: GPL-3.0-or-later
#include <QtTest>

#include "engine/common/error.h"
#include "engine/model/model_spec.h"
#include "engine/model/model_zoo.h"

using namespace rookery;
using namespace rookery::model;

class TestModelSpec : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void mlpCosts()
    {
        const auto costs = layerCosts(mlpSpec(), 64);
        QCOMPARE(costs.size(), size_t(6));
        QCOMPARE(costs[1].parameters, int64_t(784 * 512 + 512));
        QCOMPARE(costs[3].parameters, int64_t(512 * 512 + 512));
        QCOMPARE(costs[5].parameters, int64_t(512 * 10 + 10));
        QCOMPARE(parameterCount(mlpSpec()), int64_t(669706));
        QCOMPARE(costs[1].forwardFlops, 2.0 * 784 * 512 * 64);
        QCOMPARE(costs[0].outputShape, Shape{{784}});
        QCOMPARE(costs[1].activationBytes, int64_t(64 * 512 * 4));
        QCOMPARE(costs[2].forwardFlops, 64.0 * 512); // ReLU: one op per element
        QCOMPARE(costs[5].outputShape, Shape{{10}});
    }

    void cnnShapes()
    {
        const auto costs = layerCosts(cnnSpec(), 8);
        QCOMPARE(costs[0].outputShape, (Shape{{16, 28, 28}}));
        QCOMPARE(costs[2].outputShape, (Shape{{16, 14, 14}}));
        QCOMPARE(costs[5].outputShape, (Shape{{32, 7, 7}}));
        QCOMPARE(costs[6].outputShape, (Shape{{32 * 7 * 7}}));
        QCOMPARE(costs[0].parameters, int64_t(1 * 16 * 9 + 16));
        QCOMPARE(costs[0].forwardFlops, 2.0 * 9 * 16 * 28 * 28 * 8);
        QCOMPARE(costs[3].parameters, int64_t(16 * 32 * 9 + 32));
    }

    // A residual block keeps its input's shape, holds two convolutions' parameters and
    // counts both at full size; it is refused on the wrong channels, an even kernel or
    // out unequal to in, and survives the JSON a node receives.
    void residualBlocks()
    {
        ModelSpec s;
        s.name = "res";
        s.input = Shape{{16, 14, 14}};
        s.classes = 10;
        s.layers = {
            {LayerKind::Residual, 16, 16, 3, 1, 0}, {LayerKind::Flatten}, {LayerKind::Linear, 16 * 14 * 14, 10}};
        const auto costs = layerCosts(s, 4);
        QCOMPARE(costs[0].outputShape, (Shape{{16, 14, 14}}));
        QCOMPARE(costs[0].parameters, int64_t(2 * (16 * 16 * 9 + 16)));
        QCOMPARE(costs[0].forwardFlops, (2 * 2.0 * 16 * 16 * 9 * 14 * 14 + 3.0 * 16 * 14 * 14) * 4);
        QCOMPARE(costs[0].activationBytes, int64_t(16 * 14 * 14 * 4 * 4));
        QCOMPARE(s.layers[0].describe(), std::string("Residual(16, k3)"));
        QVERIFY(modelSpecFromJson(toJson(s)) == s);
        for (auto broken :
             {LayerSpec{LayerKind::Residual, 8, 8, 3, 1, 0}, LayerSpec{LayerKind::Residual, 16, 16, 2, 1, 0},
              LayerSpec{LayerKind::Residual, 16, 32, 3, 1, 0}}) {
            ModelSpec b = s;
            b.layers[0] = broken;
            QVERIFY_THROWS_EXCEPTION(Error, validate(b));
        }
    }

    // GELU and Tanh keep their input's shape; AvgPool2d shapes as MaxPool2d does;
    // LayerNorm normalises the last dimension, holds a scale and a shift per value of it
    // and is refused on a size that is not its input's last. All survive the JSON.
    void normsActivationsAndAveragePooling()
    {
        ModelSpec s;
        s.name = "normed";
        s.input = Shape{{8, 14, 14}};
        s.classes = 10;
        s.layers = {{LayerKind::GELU},          {LayerKind::AvgPool2d, 0, 0, 2, 2, 0}, {LayerKind::Tanh},
                    {LayerKind::Flatten},       {LayerKind::Linear, 8 * 7 * 7, 64},    {LayerKind::LayerNorm, 64},
                    {LayerKind::Linear, 64, 10}};
        const auto costs = layerCosts(s, 2);
        QCOMPARE(costs[0].outputShape, (Shape{{8, 14, 14}}));
        QCOMPARE(costs[0].parameters, int64_t(0));
        QCOMPARE(costs[1].outputShape, (Shape{{8, 7, 7}}));
        QCOMPARE(costs[1].forwardFlops, 8.0 * 7 * 7 * 4 * 2); // a 2x2 window per output
        QCOMPARE(costs[2].outputShape, (Shape{{8, 7, 7}}));
        QCOMPARE(costs[5].outputShape, (Shape{{64}}));
        QCOMPARE(costs[5].parameters, int64_t(2 * 64));
        QCOMPARE(parameterCount(s), int64_t(8 * 7 * 7 * 64 + 64 + 2 * 64 + 64 * 10 + 10));
        QCOMPARE(s.layers[1].describe(), std::string("AvgPool2d(k2 s2)"));
        QCOMPARE(s.layers[5].describe(), std::string("LayerNorm(64)"));
        QCOMPARE(s.layers[0].describe(), std::string("GELU"));
        QVERIFY(modelSpecFromJson(toJson(s)) == s);
        ModelSpec b = s;
        b.layers[5].in = 32;
        try {
            validate(b);
            QFAIL("a LayerNorm of the wrong size was accepted");
        } catch (const Error &e) {
            QVERIFY2(std::string(e.what()).find("model layer 5 (LayerNorm(32)): normalises the last 32 values but "
                                                "receives 64") != std::string::npos,
                     e.what());
        }
        b = s;
        b.layers[1].kernel = 16; // larger than 14x14
        QVERIFY_THROWS_EXCEPTION(Error, validate(b));
    }

    // A patch embedding cuts 28x28 into 7x7 patches of 4x4 and adds a position per
    // patch; an encoder block keeps its tokens' shape and holds its two norms,
    // projections and MLP; the token mean pools them for the head. All survive the JSON,
    // and each is refused where its shape rule fails.
    void transformerBlocks()
    {
        ModelSpec s;
        s.name = "vit";
        s.input = Shape{{1, 28, 28}};
        s.classes = 10;
        LayerSpec encoder{LayerKind::Encoder, 64, 64};
        encoder.heads = 4;
        encoder.hidden = 128;
        LayerSpec dropout{LayerKind::Dropout};
        dropout.rate = 0.1;
        s.layers = {
            {LayerKind::PatchEmbed, 1, 64, 4}, dropout, encoder, {LayerKind::TokenMean}, {LayerKind::BatchNorm, 64},
            {LayerKind::Linear, 64, 10}};
        const auto costs = layerCosts(s, 2);
        QCOMPARE(costs[0].outputShape, (Shape{{49, 64}}));
        QCOMPARE(costs[0].parameters, int64_t(16 * 64 + 64 + 49 * 64));
        QCOMPARE(costs[0].forwardFlops, (2.0 * 16 * 49 * 64 + 49 * 64) * 2);
        QCOMPARE(costs[1].outputShape, (Shape{{49, 64}}));
        QCOMPARE(costs[1].savedBytes, int64_t(49 * 64 * 8 * 2)); // output and a float mask
        QCOMPARE(costs[2].outputShape, (Shape{{49, 64}}));
        QCOMPARE(costs[2].parameters, int64_t(4 * 64 * 64 + 2 * 64 * 128 + 9 * 64 + 128));
        const double t = 49, d = 64, h = 128;
        QCOMPARE(costs[2].forwardFlops,
                 2 * (8 * t * d * d + 4 * t * d * h + 4 * t * t * d + 6 * 4 * t * t + 18 * t * d + 8 * t * h));
        QVERIFY(costs[2].savedBytes > 8 * costs[2].activationBytes); // attention keeps much more than its output
        QCOMPARE(costs[3].outputShape, (Shape{{64}}));
        QCOMPARE(costs[4].parameters, int64_t(2 * 64));
        QCOMPARE(s.layers[0].describe(), std::string("PatchEmbed(1->64, patch 4)"));
        QCOMPARE(s.layers[1].describe(), std::string("Dropout(0.1)"));
        QCOMPARE(s.layers[2].describe(), std::string("Encoder(64, 4 heads, hidden 128)"));
        QCOMPARE(s.layers[4].describe(), std::string("BatchNorm(64)"));
        QVERIFY(modelSpecFromJson(toJson(s)) == s);
        const auto refused = [&](size_t index, auto change, const char *says) {
            ModelSpec b = s;
            change(b.layers[index]);
            try {
                validate(b);
                QFAIL(qPrintable(QStringLiteral("accepted: ") + QString::fromStdString(b.layers[index].describe())));
            } catch (const Error &e) {
                QVERIFY2(std::string(e.what()).find(says) != std::string::npos, e.what());
            }
        };
        refused(
            0, [](LayerSpec &l) { l.kernel = 29; }, "patch larger than its input 1x28x28");
        refused(
            0, [](LayerSpec &l) { l.in = 3; }, "expects 3 input channels");
        refused(
            1, [](LayerSpec &l) { l.rate = 1; }, "rate must be at least 0 and below 1");
        refused(
            2, [](LayerSpec &l) { l.heads = 5; }, "heads dividing the width");
        refused(
            2, [](LayerSpec &l) { l.in = l.out = 32; }, "expects tokens of 32 values (TxD) but receives 49x64");
        refused(
            4, [](LayerSpec &l) { l.in = 32; }, "expects 32 features (F) or channels");
        ModelSpec noTokens = s;
        noTokens.layers.erase(noTokens.layers.begin(), noTokens.layers.begin() + 3); // TokenMean on 1x28x28
        QVERIFY_THROWS_EXCEPTION(Error, validate(noTokens));
    }

    void rejectsMismatchedLayers()
    {
        ModelSpec bad = mlpSpec();
        bad.layers[3].in = 100;
        try {
            validate(bad);
            QFAIL("expected an error");
        } catch (const Error &e) {
            QVERIFY2(QString::fromUtf8(e.what()).contains(QStringLiteral("layer 3")), e.what());
        }
        ModelSpec wrongClasses = mlpSpec();
        wrongClasses.classes = 7;
        QVERIFY_THROWS_EXCEPTION(Error, validate(wrongClasses));
        ModelSpec noFlatten = mlpSpec();
        noFlatten.layers.erase(noFlatten.layers.begin());
        QVERIFY_THROWS_EXCEPTION(Error, validate(noFlatten));
        ModelSpec bigKernel = cnnSpec();
        bigKernel.layers[0].kernel = 40;
        QVERIFY_THROWS_EXCEPTION(Error, validate(bigKernel));
    }

    void slicesKeepShapes()
    {
        const ModelSpec whole = cnnSpec();
        const ModelSpec tail = sliceOf(whole, 3, whole.layers.size());
        QCOMPARE(tail.input, (Shape{{16, 14, 14}}));
        QCOMPARE(tail.classes, 10);
        validate(tail);
        const ModelSpec head = sliceOf(whole, 0, 3);
        QCOMPARE(head.classes, 0);
        validate(head);
        QCOMPARE(parameterCount(head) + parameterCount(tail), parameterCount(whole));
        QVERIFY_THROWS_EXCEPTION(Error, sliceOf(whole, 3, 3));
        QVERIFY_THROWS_EXCEPTION(Error, sliceOf(whole, 0, 99));
    }

    void jsonRoundTrip_data()
    {
        QTest::addColumn<QString>("name");
        for (const auto &n : modelNames())
            QTest::newRow(n.c_str()) << QString::fromStdString(n);
    }

    void jsonRoundTrip()
    {
        QFETCH(QString, name);
        const ModelSpec spec = modelByName(name.toStdString());
        QCOMPARE(modelSpecFromJson(toJson(spec)), spec);
    }

    void rejectsMalformedJson_data()
    {
        QTest::addColumn<QString>("json");
        QTest::newRow("not json") << "{nope";
        QTest::newRow("missing layers") << R"({"name":"m","input":[784],"classes":10})";
        QTest::newRow("unknown kind") << R"({"name":"m","input":[4],"classes":2,"layers":[{"kind":"Attention"}]})";
        QTest::newRow("wrong type") << R"({"name":"m","input":"784","classes":10,"layers":[]})";
        QTest::newRow("inconsistent")
            << R"({"name":"m","input":[4],"classes":2,"layers":[{"kind":"Linear","in":5,"out":2}]})";
    }

    void rejectsMalformedJson()
    {
        QFETCH(QString, json);
        QVERIFY_THROWS_EXCEPTION(Error, modelSpecFromJson(json.toStdString()));
    }

    void unknownModelListsKnownOnes()
    {
        try {
            modelByName("resnet");
            QFAIL("expected an error");
        } catch (const Error &e) {
            QVERIFY(QString::fromUtf8(e.what()).contains(QStringLiteral("mlp, cnn")));
        }
    }
};

QTEST_APPLESS_MAIN(TestModelSpec)
#include "tst_model_spec.moc"
