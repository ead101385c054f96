// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "engine/host/engine_snapshot.h"
#include "ui/cards/card.h"

namespace rookery::ui {

/// What this computer has given: samples processed and compute-hours, today and in
/// total (the engine keeps both across restarts).
///
/// Thread safety: UI thread.
class ContributionCard : public Card
{
    Q_OBJECT

public:
    explicit ContributionCard(QWidget *parent = nullptr);
    void showContribution(const host::ContributionView &contribution);

    QLabel *samplesTotalLabel() const { return m_samplesTotal; }

private:
    QLabel *m_samplesToday;
    QLabel *m_samplesTotal;
    QLabel *m_hoursToday;
    QLabel *m_hoursTotal;
};

} // namespace rookery::ui
