// SPDX-License-Identifier: GPL-3.0-or-later
// The outer optimizer after each averaging round (DiLoCo's Nesterov step): checked
// against steps computed by hand, plain averaging when its settings say so, and bad
// settings refused with a sentence.
#include <QtTest>

#include "engine/swarm/outer_optimizer.h"

using namespace rookery::swarm;

namespace {

void compareClose(const std::vector<float> &got, const std::vector<double> &want)
{
    QCOMPARE(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
        QVERIFY2(std::abs(double(got[i]) - want[i]) < 1e-5,
                 qPrintable(QStringLiteral("element %1: %2, not %3").arg(i).arg(got[i]).arg(want[i])));
}

} // namespace

class TestOuterOptimizer : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void nesterovStepsMatchTheHandComputedOnes()
    {
        OuterOptimizer o({0.7, 0.9});
        // The first round has no anchor: it starts at the average.
        compareClose(o.step(std::vector<float>{1.0f, 2.0f}), {1.0, 2.0});
        QVERIFY(o.hasAnchor());
        // delta = (1, 2) - (0.8, 2.5) = (0.2, -0.5); velocity = delta;
        // weights = anchor - 0.7 * (delta + 0.9 * velocity) = (0.734, 2.665).
        compareClose(o.step(std::vector<float>{0.8f, 2.5f}), {0.734, 2.665});
        // delta = (0.734 - 0.6, 2.665 - 2.665) = (0.134, 0);
        // velocity = 0.9 * (0.2, -0.5) + delta = (0.314, -0.45);
        // weights = (0.734 - 0.7 * (0.134 + 0.2826), 2.665 - 0.7 * (0 - 0.405)) = (0.44238, 2.9485).
        compareClose(o.step(std::vector<float>{0.6f, 2.665f}), {0.44238, 2.9485});
    }

    void withoutMomentumItScalesTheAveragedChange()
    {
        OuterOptimizer o({0.5, 0});
        o.step(std::vector<float>{4.0f});
        compareClose(o.step(std::vector<float>{2.0f}), {3.0}); // half way from 4 to 2
        compareClose(o.step(std::vector<float>{1.0f}), {2.0}); // half way from 3 to 1
    }

    void plainSettingsReturnTheAverage()
    {
        OuterOptimizer o({});
        QVERIFY(o.settings().plain());
        o.step(std::vector<float>{1.0f, 1.0f});
        compareClose(o.step(std::vector<float>{0.25f, -3.0f}), {0.25, -3.0});
        compareClose(o.step(std::vector<float>{7.0f, 8.0f}), {7.0, 8.0});
    }

    void membersFromTheSameAnchorStayEqual()
    {
        OuterOptimizer a({0.7, 0.9}), b({0.7, 0.9});
        const std::vector<std::vector<float>> averages = {{1, 2, 3}, {0.9f, 2.2f, 2.5f}, {0.7f, 2.1f, 2.6f}};
        for (const auto &avg : averages)
            QCOMPARE(a.step(avg), b.step(avg));
    }

    // The anchor is the base the ring's next round sums differences from; its tag is how
    // members tell that they share it: equal anchors, equal tags; another anchor, another
    // tag; none after a reset.
    void theAnchorAndItsTagFollowTheRounds()
    {
        OuterOptimizer plain({}), a({0.7, 0.9}), b({0.7, 0.9});
        QCOMPARE(plain.anchorTag(), uint64_t(0));
        QVERIFY(plain.anchor().empty());
        plain.step(std::vector<float>{1.0f, 2.0f});
        QCOMPARE(std::vector<float>(plain.anchor().begin(), plain.anchor().end()), (std::vector<float>{1.0f, 2.0f}));
        QVERIFY(plain.anchorTag() != 0);
        const uint64_t first = plain.anchorTag();
        plain.step(std::vector<float>{1.0f, 2.5f});
        QCOMPARE(plain.anchor()[1], 2.5f);
        QVERIFY(plain.anchorTag() != first);
        for (const auto &avg : std::vector<std::vector<float>>{{1, 2}, {0.8f, 2.5f}}) {
            const auto stepped = a.step(avg);
            b.step(avg);
            QCOMPARE(std::vector<float>(a.anchor().begin(), a.anchor().end()), stepped);
            QCOMPARE(a.anchorTag(), b.anchorTag());
        }
        b.reset();
        QCOMPARE(b.anchorTag(), uint64_t(0));
        QVERIFY(b.anchor().empty());
    }

    // The carry (what rounding left out, RingEncoding::carry): none without an anchor,
    // zeros the size of the anchor after the first round, kept as the ring wrote it
    // across steps, and gone with a reset or a new shape.
    void theCarryFollowsTheAnchor()
    {
        OuterOptimizer o({0.7, 0.9});
        QVERIFY(o.carry().empty());
        o.step(std::vector<float>{1.0f, 2.0f});
        QCOMPARE(std::vector<float>(o.carry().begin(), o.carry().end()), (std::vector<float>{0.0f, 0.0f}));
        o.carry()[1] = 0.25f; // as a ring's round leaves it
        o.step(std::vector<float>{1.5f, 2.5f});
        QCOMPARE(o.carry()[1], 0.25f);
        o.step(std::vector<float>{1.0f, 2.0f, 3.0f});
        QCOMPARE(std::vector<float>(o.carry().begin(), o.carry().end()), (std::vector<float>{0.0f, 0.0f, 0.0f}));
        o.reset();
        QVERIFY(o.carry().empty());
    }

    void aNewShapeOrAResetStartsAgainFromTheAverage()
    {
        OuterOptimizer o({0.7, 0.9});
        o.step(std::vector<float>{1.0f, 2.0f});
        o.step(std::vector<float>{0.5f, 1.0f});
        // The ring's layers changed: no anchor for three values.
        compareClose(o.step(std::vector<float>{5.0f, 6.0f, 7.0f}), {5.0, 6.0, 7.0});
        o.reset();
        QVERIFY(!o.hasAnchor());
        compareClose(o.step(std::vector<float>{9.0f, 9.0f, 9.0f}), {9.0, 9.0, 9.0});
        // And the momentum went with the anchor: one plain-momentum step from here.
        compareClose(o.step(std::vector<float>{8.0f, 9.0f, 10.0f}), {9 - 0.7 * 1.9, 9.0, 9 + 0.7 * 1.9});
    }

    void badSettingsSayWhy()
    {
        const auto says = [](double lr, double momentum, const std::string &what) {
            return OuterSettings{lr, momentum}.problem().find(what) != std::string::npos;
        };
        const auto fine = [](double lr, double momentum) { return OuterSettings{lr, momentum}.problem().empty(); };
        QVERIFY(fine(1, 0));
        QVERIFY(fine(0.7, 0.9));
        QVERIFY(says(0, 0, "outer learning rate"));
        QVERIFY(says(2.5, 0, "at most 2"));
        QVERIFY(says(0.7, 1, "outer momentum"));
        QVERIFY(says(0.7, -0.1, "outer momentum"));
        QVERIFY(!fine(std::nan(""), 0));
        QVERIFY(says(std::nan(""), 0, "outer learning rate"));
    }
};

QTEST_GUILESS_MAIN(TestOuterOptimizer)
#include "tst_outer_optimizer.moc"
